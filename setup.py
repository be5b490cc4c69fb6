"""pulp-sync: a Pulp-style sync service with pluggable downloaders, and a harness that compares them."""

from setuptools import find_namespace_packages, setup

PACKAGES = ("pulp_base", "downloaders", "fixtures", "conformance", "pulp_sync", "harness")
"""Ours, with every folder below them: as namespace packages, so that the data folders
(harness/report/templates, conformance/template/files) are packages of their own rather than folders
setuptools warns it would ignore. Named exactly ("fixtures*" would take the generated fixtures-data/)."""

setup(
    name="pulp-sync",
    version="0.1.0",
    description="Sync PULP_MANIFEST repositories with pluggable downloaders, and measure them fairly",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",
    packages=find_namespace_packages(include=[*PACKAGES, *(f"{top}.*" for top in PACKAGES)], exclude=["*.__pycache__"]),
    include_package_data=True,
    package_data={
        "fixtures": ["*.conf.template"],
        "pulp_sync.api": ["*.conf.template"],
        "harness.report.templates": ["*.html"],
        "harness.variants": ["hosts.sh"],
        "downloaders": ["py.typed"],
        "conformance.template.files": ["*"],
    },
    install_requires=[
        "aiohttp>=3.9",
        "urllib3>=2.2",
        "Django>=5.2",
        "dj-database-url>=2.1",
        "click>=8.1",
        "rich>=13.7",
        "numpy>=1.24",
        "scipy>=1.10",
        "matplotlib>=3.7",
        "Jinja2>=3.0",  # report.html (harness.report.html); 2.x's PackageLoader needs pkg_resources
        "djangorestframework>=3.15",
        "drf-spectacular>=0.27",
        "gunicorn>=27.0",  # the API behind nginx; 27 is the first with a control socket, which it turns off
        "rq>=3.0",
        "redis>=5.0",
        "packaging>=22.0",  # reading plugins' requirements for results.json (harness.run.provenance)
        # experiment specs checked by their schema (harness.experiment.spec); 2.11 is the first to read the
        # docstrings of a standard dataclass's fields (use_attribute_docstrings) into the JSON Schema
        "pydantic>=2.11",
        # the service's settings from the environment, one typed list (pulp_sync.environment); 2.7 is the first
        # with NoDecode, which leaves a comma-separated list to the field's own parser rather than JSON
        "pydantic-settings>=2.7",
        "psutil>=5.9.4",  # the machine's state around an experiment (harness.run.machine)
    ],
    extras_require={
        "postgres": ["psycopg[binary]>=3.1"],
        "mysql": ["mysqlclient>=2.2"],
        "conformance": ["pytest>=8.0"],  # the downloader conformance suite, for plugin authors (docs/plugins.md)
        "test": [
            "pytest>=8.0",
            "pytest-timeout>=2.3",
            "pytest-xdist>=3.8",  # the suite over several workers, a file to each (runtests.sh, tests/conftest.py)
            "hypothesis>=6.100",
            "pytest-benchmark>=4.0",
            "pulp-cli>=0.41.1",  # Pulp's own client, against the Pulp 3 dialect (tests/pulp_sync/test_pulp_cli.py)
            "selenium>=4.11",  # drives Debian's chromium over report.html (tests/harness/report/test_report_browser.py)
            "ruff>=0.17.6",  # lint: `ruff check`, configured in pyproject.toml
            "mypy>=2.4.1",  # types: `mypy`, configured in pyproject.toml
            "types-pycurl>=7.49",  # the pycurl example plugin's types (examples/pulp-sync-pycurl)
            # scipy's types (harness.analysis.stats); 1.14.1.0-.3 pin optype < 0.7, on which mypy 2.4 crashes,
            # and 1.14.1.4 types optimize.brentq's result as a float or a tuple
            "scipy-stubs>=1.14.1.5",
            "types-psutil>=5.9.5.20240516",  # psutil's types (harness.run.machine, harness.run.child)
            "types-mysqlclient>=2.0",  # MySQLdb's types (harness.variants.databases; psycopg ships its own)
            # Django's and DRF's types and mypy's django plugin (pulp_sync/), at the versions checked with
            "django-stubs>=6.1.2",
            "djangorestframework-stubs>=3.18.1",
            "types-gunicorn>=26.2.0.20261008",  # gunicorn's types (pulp_sync.api.server)
        ],
    },
    entry_points={
        "console_scripts": ["pulp-sync = pulp_sync.cli:main"],
        "pulp_sync.downloaders": [
            "asyncio = downloaders.asyncio_engine:AsyncioDownloader",
            "futures = downloaders.futures_engine:FuturesDownloader",
        ],
        "pytest11": ["pulp_sync_conformance = conformance.plugin"],
        "pulp_sync.commands": [  # mounted on `pulp-sync` (pulp_sync/cli/__init__.py), imported only when named
            "bench = harness.cli:bench_group",
            "fixtures = fixtures.cli:fixtures_group",
            "plugin = conformance.template:plugin_group",
        ],
    },
)
