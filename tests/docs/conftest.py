"""The doc blocks' table: what each block of README.md and docs/*.md did and how long it took,
printed after the test summary (from the ``doc_block`` property each test records, which
pytest-xdist carries back from its workers)."""


def pytest_terminal_summary(terminalreporter):
    rows = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            properties = dict(getattr(report, "user_properties", ()))
            if "doc_block" in properties and getattr(report, "when", "call") in ("setup", "call"):
                name = report.nodeid.split("[", 1)[-1].rstrip("]")
                rows[name] = properties["doc_block"]
    if rows:
        width = max(len(name) for name in rows)
        terminalreporter.write_sep("-", "doc blocks (tests/docs/test_doc_commands.py)")
        for name in sorted(rows, key=_page_and_line):
            terminalreporter.write_line(f"{name:<{width}}  {rows[name]}")


def _page_and_line(name):
    page, _, line = name.rpartition(":")
    return (page != "README.md", page, int(line) if line.isdigit() else 0)
