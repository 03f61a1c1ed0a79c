"""Fetch a trec_eval binary (the C program) for the benchmarks and the differential test, from PyPI.

trec_eval's sources live on GitHub; where only the package registries can be reached, the program still ships
inside a Python package: pyserini's source distribution holds Anserini's fat jar, which carries jtreceval's builds
of trec_eval 9.0.4 for each platform (``trec_eval/trec_eval-linux-amd64`` ...). This script downloads that source
distribution with pip (no install), takes the binary for this machine out of the jar and writes it to ``--out``
(default ``~/.cache/meta-eval/trec_eval``). Nothing of it is part of meta-eval.

Usage: python scripts/fetch_trec_eval.py [--out PATH] [--pyserini 1.6.0]
Then:  python scripts/bench_evaluate.py --trec-eval ~/.cache/meta-eval/trec_eval
       META_EVAL_TREC_EVAL=~/.cache/meta-eval/trec_eval pytest tests/test_trec_eval_binary.py
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PLATFORMS = {("Linux", "x86_64"): "linux-amd64", ("Linux", "i686"): "linux-i386",
             ("Darwin", "x86_64"): "macosx-x86_64", ("Darwin", "arm64"): "macosx-aarch64"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path.home() / ".cache/meta-eval/trec_eval")
    parser.add_argument("--pyserini", default="1.6.0", help="pyserini version whose sdist carries the jar")
    args = parser.parse_args()
    key = (platform.system(), platform.machine())
    if key not in PLATFORMS:
        raise SystemExit(f"no trec_eval build for {key[0]} {key[1]} in the jar; known: {sorted(PLATFORMS)}")
    member = f"trec_eval/trec_eval-{PLATFORMS[key]}"
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", tmp,
                        f"pyserini=={args.pyserini}"], check=True)
        sdist = next(Path(tmp).glob("pyserini-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            jar_member = next(m for m in tar.getmembers() if m.name.endswith("-fatjar.jar"))
            jar_member.name = Path(jar_member.name).name  # extracted flat, whatever the archive's paths
            tar.extract(jar_member, tmp)
        with zipfile.ZipFile(Path(tmp) / jar_member.name) as jar:
            binary = jar.read(member)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(binary)
    args.out.chmod(0o755)
    shown = subprocess.run([str(args.out), "-v"], capture_output=True, text=True, check=False)  # -v exits 0 or not
    version = (shown.stdout + shown.stderr).strip()
    print(f"{args.out}: {version or 'trec_eval'} (from {jar_member.name.rsplit('/', 1)[-1]})")


if __name__ == "__main__":
    main()
