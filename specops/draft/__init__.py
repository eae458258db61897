"""Drafts trained here: data synthesis with the served target, ModelOpt training, export."""
