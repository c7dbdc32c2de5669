#!/usr/bin/env python3
"""Runs the tutorial of docs/scenarios.md, so the page and streamsan cannot drift.

In the section "Tutorial: ..." every ```sh block is a list of commands and
every ```yaml block whose first line is `# file: PATH` is a file the reader
writes. They are replayed in the page's order in an empty folder, by one bash
process (so `cd` carries over), with the built streamsan first on PATH. A
command must exit 0, or N where its line ends with `# exits N`. Any failure
names the line of the page.
"""
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(os.environ["STREAMSAN_SOURCE_ROOT"])
EXE = pathlib.Path(os.environ["STREAMSAN_EXE"])
PAGE = SOURCE / "docs" / "scenarios.md"


def tutorial_blocks(text):
    """(language, first line number of the body, body) of each fenced block
    in the tutorial section."""
    start = text.index("\n## Tutorial")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end >= 0 else len(text)]
    base = text[:start].count("\n") + 1
    for m in re.finditer(r"^```(\w*)\n(.*?)^```$", section, re.S | re.M):
        line = base + section[:m.start()].count("\n") + 1
        yield m.group(1), line, m.group(2)


def script(blocks):
    out = ["set -u"]
    commands = files = 0
    for lang, line, body in blocks:
        if lang == "yaml" and body.startswith("# file: "):
            path = body.splitlines()[0][len("# file: "):].strip()
            out.append(f"cat > {shlex.quote(path)} <<'STREAMSAN_TUTORIAL_EOF'\n{body}"
                       "STREAMSAN_TUTORIAL_EOF")
            files += 1
        elif lang == "sh":
            for i, command in enumerate(body.splitlines()):
                if not command.strip() or command.lstrip().startswith("#"):
                    continue
                m = re.search(r"#\s*exits\s+(\d+)\s*$", command)
                want = int(m.group(1)) if m else 0
                where = f"{PAGE.name}:{line + i}"
                out.append(f"echo {shlex.quote('$ ' + command)}")
                out.append(command)
                out.append(f'rc=$?; if [ $rc -ne {want} ]; then echo "{where}: this command '
                           f'exited $rc, expected {want}" >&2; exit 1; fi')
                commands += 1
    return "\n".join(out) + "\n", commands, files


def main():
    blocks = list(tutorial_blocks(PAGE.read_text(encoding="utf-8")))
    text, commands, files = script(blocks)
    if commands < 5 or files < 2:
        sys.exit(f"{PAGE}: found {commands} commands and {files} files in the tutorial; "
                 "did its heading or its blocks change form?")
    env = dict(os.environ, PATH=f"{EXE.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    with tempfile.TemporaryDirectory(prefix="streamsan_tutorial_") as d:
        run = subprocess.run(["bash", "-c", text], cwd=d, env=env)
    print(f"tutorial: {commands} commands, {files} files: "
          f"{'all as the page says' if run.returncode == 0 else 'FAILED'}")
    sys.exit(run.returncode)


if __name__ == "__main__":
    main()
