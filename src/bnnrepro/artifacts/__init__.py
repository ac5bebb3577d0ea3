"""Figures and tables: the registry of all artifacts and the functions that draw ours."""
