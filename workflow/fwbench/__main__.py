"""fwbench's commands on sweeps already run: each reads what a sweep wrote, changing none of it."""

from __future__ import annotations

import argparse
import sys
from types import ModuleType

from fwbench.tools import agreement, breakdown, decided, diff, reanalyse, variation

# A command's module holds its text (its usage and what it prints), `add_arguments` and `run`.
COMMANDS: dict[str, tuple[ModuleType, str]] = {
    "agreement": (agreement, "do two sweeps of one config agree on their comparisons?"),
    "breakdown": (breakdown, "where a sweep's wall time went: per part, rule and precision"),
    "decided": (decided, "per batch and kind: the share decided, the median CI half-width"),
    "reanalyse": (reanalyse, "a finished sweep's statistics recomputed by this checkout"),
    "diff": (diff, "two code versions' stats.csv and report.md over the same cells"),
    "variation": (variation, "how far medians move between processes; do the CIs hold it?"),
}


def build_parser() -> argparse.ArgumentParser:
    """The parser of `python -m fwbench`: one subcommand per entry of COMMANDS, listed with its
    summary; a subcommand's help is its module's text."""
    listing = "\n".join(f"  {name:<11} {summary}" for name, (_, summary) in COMMANDS.items())
    parser = argparse.ArgumentParser(
        prog="python -m fwbench",
        description=__doc__,
        epilog=f"commands:\n{listing}\n\n`python -m fwbench COMMAND --help` for its usage.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, help="one of the commands below"
    )
    for name, (module, _) in COMMANDS.items():
        command = commands.add_parser(
            name,
            description=module.__doc__.strip(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(command)
        command.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs the command `argv` names (default: the command line's); its exit status."""
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
