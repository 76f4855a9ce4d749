"""Deferrable triggers: connector state over REST and over the status topic, served
certificates, plugins listed by the workers."""
