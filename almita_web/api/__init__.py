"""Shared REST API pieces: role permissions, filtering, pagination and the docs page."""
