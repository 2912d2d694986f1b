#!/usr/bin/env python3
"""Keeps docs/cli.md true: each of its help blocks is the tool's own --help.

Usage: cli-reference.py --bin BUILD/bin [--check]

The block after a heading `### zbc SUBCOMMAND` is `zbc SUBCOMMAND --help`,
the one after `## zbc` is `zbc --help`, and the one after `## zbc-opt` is the
zb passes and pipelines of `zbc-opt --help` (the generic options left out).
Without --check the page is rewritten; with it, the exit code is 1 and the
stale headings are named when a block differs (ctest's cli-reference-fresh
runs that, so a changed flag fails until the page follows it).
"""
import argparse
import os
import re
import subprocess
import sys

PAGE = os.path.join(os.path.dirname(__file__), "..", "docs", "cli.md")


def help_of(command):
    out = subprocess.run(command + ["--help"], capture_output=True, text=True,
                         check=True).stdout
    lines = out.splitlines()
    # The overview line and llvm::cl's generic options say nothing of zbc.
    kept, skipping = [], False
    for line in lines:
        if line.startswith("OVERVIEW:") or line.strip() == "OPTIONS:" or \
                line.strip().startswith("--version"):
            continue
        if line.strip() == "Generic Options:":
            skipping = True
            continue
        if skipping:
            if line.strip() and not line.startswith("  --help"):
                skipping = False
            else:
                continue
        kept.append(line.rstrip())
    while kept and not kept[0]:
        kept.pop(0)
    text = "\n".join(kept)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def zb_passes(zbc_opt):
    """The zb passes and pipelines of zbc-opt --help, each with its options."""
    out = subprocess.run([zbc_opt, "--help"], capture_output=True, text=True,
                         check=True).stdout
    block, keep, indent = [], False, None
    for line in out.splitlines():
        stripped = line.lstrip()
        depth = len(line) - len(stripped)
        if stripped.startswith("--zb-") or stripped.startswith(
                "--convert-zb-to-emitc"):
            keep, indent = True, depth
        elif keep and depth <= indent:
            keep = False
        if keep:
            name, _, text = stripped.partition(" - ")
            prefix = "  " + "  " * ((depth - indent) // 2)
            block.append(f"{prefix}{name.rstrip()} - {text.strip()}")
    return "\n".join(block)


def refresh(text, bin_dir):
    zbc = os.path.join(bin_dir, "zbc")
    blocks = {"## zbc": help_of([zbc]),
              "## zbc-opt": zb_passes(os.path.join(bin_dir, "zbc-opt"))}
    for heading in re.findall(r"^### zbc ([a-z-]+)$", text, re.M):
        blocks[f"### zbc {heading}"] = help_of([zbc, heading])
    stale = []
    for heading, body in blocks.items():
        # The first fenced block after the heading, before the next one.
        at = re.search(r"^" + re.escape(heading) + r"$", text, re.M)
        start = text.find("\n```\n", at.end()) if at else -1
        end = text.find("\n```", start + 5) if start >= 0 else -1
        if start < 0 or end < 0 or "\n#" in text[at.end():start]:
            sys.exit(f"cli-reference: no help block after '{heading}' in {PAGE}")
        start += len("\n```\n")
        if text[start:end] != body:
            stale.append(heading)
            text = text[:start] + body + text[end:]
    return text, stale


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    with open(PAGE) as f:
        text = f.read()
    new, stale = refresh(text, args.bin)
    if args.check:
        if stale:
            print("docs/cli.md is stale under: " + ", ".join(stale) +
                  "\n  refresh it: scripts/cli-reference.py --bin build/bin")
            return 1
        print("docs/cli.md: every help block is the tools' own")
        return 0
    with open(PAGE, "w") as f:
        f.write(new)
    print("docs/cli.md: refreshed " + (", ".join(stale) or "nothing"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
