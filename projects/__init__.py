"""Projects: separate efforts with their own members, roles, settings and data (issue #30)."""
