"""``make demo``: the end-to-end story (``python -m dags.demo``); see ``__main__``."""
