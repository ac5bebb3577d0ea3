"""`python -m bnnrepro.data generate DATASET INSTANCE OUT`: write one data file."""

import argparse
from pathlib import Path

from bnnrepro.data.registry import generate_instance


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bnnrepro.data")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="generate one instance of a synthetic dataset")
    gen.add_argument("dataset")
    gen.add_argument("instance", help="data keys and seed, e.g. omega=4,seed=0")
    gen.add_argument("out", type=Path)
    args = parser.parse_args()
    generate_instance(args.dataset, args.instance, args.out)


if __name__ == "__main__":
    main()
