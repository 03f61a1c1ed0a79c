"""Packaging glue that pyproject.toml cannot express: ship data/demo inside the wheel as meta_eval/demo_data
(and data/ltr-demo as meta_eval/ltr_demo_data).

Everything else (metadata, dependencies, entry points) lives in pyproject.toml.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["meta_eval", "meta_eval.*"]) + ["meta_eval.demo_data", "meta_eval.demo_data.runs",
                                                                   "meta_eval.ltr_demo_data"],
    package_dir={"meta_eval.demo_data": "data/demo", "meta_eval.demo_data.runs": "data/demo/runs",
                 "meta_eval.ltr_demo_data": "data/ltr-demo"},
    package_data={"meta_eval.demo_data": ["*.txt", "*.md"], "meta_eval.demo_data.runs": ["*.gz"],
                  "meta_eval.ltr_demo_data": ["*.gz", "*.md"]},
)
