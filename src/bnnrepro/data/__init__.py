"""Datasets: generators, loaders and the registry that names them."""
