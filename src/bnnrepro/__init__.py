"""bnnrepro: workflow-orchestrated reproductions of five Bayesian deep learning works."""

__version__ = "0.1.0"
