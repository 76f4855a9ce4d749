"""Deferrable triggers: connector state over REST and over the status topic."""
