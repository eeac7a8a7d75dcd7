#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates single_include/lazytensor.hpp from include/: the library's own headers inlined in
dependency order (each once, where it is first included), system and dependency includes left
as they are, the version stamped at the top. The optional interop headers
(include/lazytensor/interop/*.hpp, which lazytensor.hpp does not include) are copied beside it
as they are: they include only <lazytensor.hpp> of the library, so they work with either.

    python3 tools/make_single_header.py            # (re)write single_include/lazytensor.hpp
    python3 tools/make_single_header.py --check    # exit 1 if the committed file is stale

Standard library only. A header that is first included under an #if and later included where
that #if does not hold would vanish from the single header; that is reported as an error
instead of generating a header that differs from include/.
"""
import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "include"
ENTRY = INCLUDE / "lazytensor.hpp"
OUTPUT = ROOT / "single_include" / "lazytensor.hpp"
INTEROP = Path("lazytensor") / "interop"  # under include/ and beside the single header

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
CONDITIONAL_RE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b")
PRAGMA_ONCE_RE = re.compile(r"^\s*#\s*pragma\s+once\b")
RAW_STRING_OPEN_RE = re.compile(r'R"([^()\\\s]{0,16})\(')
SPDX_RE = re.compile(r"^//\s*SPDX-License-Identifier:")
VERSION_RE = re.compile(r"^#define LAZYTENSOR_VERSION_(MAJOR|MINOR|PATCH) (\d+)", re.M)


class GenerationError(Exception):
    pass


def version():
    text = (INCLUDE / "lazytensor" / "core" / "version.hpp").read_text()
    parts = dict(VERSION_RE.findall(text))
    return "{MAJOR}.{MINOR}.{PATCH}".format(**parts)


def library_header(spec, quote, including_file):
    """The file under include/ an include line names, or None for a system/dependency header."""
    candidates = []
    if quote == '"':
        candidates.append(including_file.parent / spec)
    candidates.append(INCLUDE / spec)
    for c in candidates:
        c = c.resolve()
        if c.is_file() and INCLUDE in c.parents:
            return c
    if quote == '"' or spec.startswith("lazytensor/"):
        raise GenerationError(f"{including_file.relative_to(ROOT)}: cannot find included file '{spec}'")
    return None


class Amalgamator:
    def __init__(self):
        self.first_context = {}  # header -> the conditional context it was inlined under
        self.out = []

    def inline(self, path, context):
        rel = path.relative_to(INCLUDE).as_posix()
        self.out.append(f"// ---- {rel} ----\n")
        conditionals = []  # (line number, branch) of each open #if in this file
        raw_delimiter = None
        for number, line in enumerate(path.read_text().splitlines(keepends=True), start=1):
            if raw_delimiter is not None:  # inside a raw string literal: copy, interpret nothing
                if ')' + raw_delimiter + '"' in line:
                    raw_delimiter = None
                self.out.append(line)
                continue
            opened = RAW_STRING_OPEN_RE.search(line)
            if opened and ')' + opened.group(1) + '"' not in line[opened.end():]:
                raw_delimiter = opened.group(1)
            if PRAGMA_ONCE_RE.match(line) or SPDX_RE.match(line):  # the banner carries the license once
                continue
            cond = CONDITIONAL_RE.match(line)
            if cond:
                kind = cond.group(1)
                if kind in ("if", "ifdef", "ifndef"):
                    conditionals.append((number, 0))
                elif kind in ("elif", "else"):
                    start, branch = conditionals[-1]
                    conditionals[-1] = (start, branch + 1)
                else:
                    conditionals.pop()
            inc = INCLUDE_RE.match(line)
            if inc:
                header = library_header(inc.group(2), inc.group(1), path)
                if header is not None:
                    here = context + tuple((rel, n, b) for n, b in conditionals)
                    self.include(header, here, f"{rel}:{number}")
                    continue
            self.out.append(line)
        if conditionals:
            raise GenerationError(f"{rel}: unbalanced #if/#endif")
        if self.out and not self.out[-1].endswith("\n"):
            self.out.append("\n")

    def include(self, header, context, site):
        if header in self.first_context:
            first = self.first_context[header]
            if context[: len(first)] != first:
                rel = header.relative_to(INCLUDE).as_posix()
                raise GenerationError(
                    f"{site} includes {rel}, which was first inlined under conditions that may not hold "
                    f"here ({first}); include it unconditionally first")
            return
        self.first_context[header] = context
        self.inline(header, context)


def generate():
    amalgamator = Amalgamator()
    amalgamator.include(ENTRY.resolve(), (), "entry")
    license_text = "".join("//" + (" " + line if line else "") + "\n" for line in (ROOT / "LICENSE").read_text().splitlines())
    banner = (
        "// SPDX-License-Identifier: MIT\n"
        f"// lazytensor {version()}: the single-header edition.\n"
        "// Generated by tools/make_single_header.py from the headers in include/ (inlined in dependency\n"
        "// order); do not edit it: edit include/ and run `python3 tools/make_single_header.py`.\n"
        "// Needs xsimd (and, with LAZYTENSOR_OPENCL=1, the OpenCL headers; with LAZYTENSOR_CLBLAST=1,\n"
        "// CLBlast's). See README.md and docs/install.md for the macros and how to link.\n"
        "//\n" + license_text +
        "#pragma once\n"
    )
    return banner + "".join(amalgamator.out)


def interop_headers():
    """{path relative to include/: text} of the optional interop headers, checked to include no
    library header but <lazytensor.hpp> (the single header stands in for it)."""
    out = {}
    for path in sorted((INCLUDE / INTEROP).glob("*.hpp")):
        text = path.read_text()
        for number, line in enumerate(text.splitlines(), start=1):
            inc = INCLUDE_RE.match(line)
            if inc and inc.group(2) != "lazytensor.hpp" and library_header(inc.group(2), inc.group(1), path):
                raise GenerationError(f"{path.relative_to(ROOT)}:{number}: an interop header may include only "
                                      f"<lazytensor.hpp> of the library, not '{inc.group(2)}'")
        out[path.relative_to(INCLUDE)] = text
    return out


def leftover_interop(directory, files):
    """Interop headers beside the single header that include/ no longer has."""
    return [p for p in sorted((directory / INTEROP).glob("*.hpp")) if p not in files]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed single header instead of writing it")
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where to write (default: %(default)s)")
    args = parser.parse_args()
    try:
        files = {args.output: generate()}
        for rel, text in interop_headers().items():
            files[args.output.parent / rel] = text
    except GenerationError as e:
        print(f"make_single_header: {e}", file=sys.stderr)
        return 2
    if args.check:
        stale = 0
        for path, text in files.items():
            current = path.read_text() if path.is_file() else ""
            if current == text:
                continue
            stale += 1
            diff = list(difflib.unified_diff(current.splitlines(keepends=True), text.splitlines(keepends=True),
                                             str(path), "regenerated from include/", n=1))
            sys.stdout.writelines(diff[:60])
            print(f"\n{path} differs from what include/ generates ({len(diff)} diff lines): "
                  "run `python3 tools/make_single_header.py` and commit the result", file=sys.stderr)
        for extra in leftover_interop(args.output.parent, files):
            stale += 1
            print(f"{extra} has no header in include/ any more: run `python3 tools/make_single_header.py`",
                  file=sys.stderr)
        if stale:
            return 1
        print(f"{args.output} and {len(files) - 1} interop headers: up to date (lazytensor {version()})")
        return 0
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for extra in leftover_interop(args.output.parent, files):
        extra.unlink()
    print(f"wrote {args.output} (lazytensor {version()}, {files[args.output].count(chr(10))} lines) and "
          f"{len(files) - 1} interop headers beside it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
