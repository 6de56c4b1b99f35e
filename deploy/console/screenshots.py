"""Screenshots of the console's main pages, for docs/screenshots/ (and the README).

    python -m deploy.console.screenshots [--out docs/screenshots] [--keep]

Starts a three-broker local cluster in a temporary directory (or uses `--url` of a running
console), fills it with a topic of JSON records with headers, a consumer group left behind
with lag, and a broker killed (so a partition shows as under-replicated with its cause), then
saves brokers.png, topics.png, groups.png and messages.png. Drives Debian's Chromium through
Playwright (a dev dependency; no browser download): `browser_args()` are the flags this needs.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
VIEWPORT: Any = {"width": 1280, "height": 800}


def browser_args() -> list[str]:
    """Chromium flags for a headless run as root on a machine without a GPU or network: without
    the background-networking ones it hangs on refused connections."""
    return [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage",
    ]  # fmt: skip


@contextmanager
def chromium_page(user_data_dir: Path | None = None) -> Iterator[Any]:
    """A Playwright page in Debian's Chromium, with a fresh profile."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="odradek-chromium-") as tmp, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(user_data_dir or tmp), executable_path=CHROMIUM, headless=True,
            args=browser_args(), viewport=VIEWPORT,
        )  # fmt: skip
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            context.close()


def fill(bootstrap: str) -> None:
    """A topic of JSON orders with headers, and a group that read a third of them."""
    from client import Admin, Consumer, NewTopic, Producer, TopicPartition

    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic("orders", 3, 3), NewTopic("clicks", 2, 2)])
    with Producer(bootstrap) as producer:
        for i in range(120):
            doc = {"order": i, "customer": f"c-{i % 7}", "total": round(9.5 + i * 1.25, 2)}
            headers: list[tuple[str, bytes | None]] = [
                ("source", b"web" if i % 3 else b"mobile"),
                ("trace", f"t{i:04}".encode()),
            ]
            producer.send("orders", json.dumps(doc).encode(), key=f"c-{i % 7}".encode(),
                          headers=headers)  # fmt: skip
        for i in range(40):
            producer.send("clicks", f"page /item/{i}".encode())
        producer.flush()
    with Consumer(bootstrap, group_id="billing", auto_offset_reset="earliest") as consumer:
        consumer.subscribe(["orders"])
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 40 and time.monotonic() < deadline:
            seen += sum(len(r) for r in consumer.poll(timeout_ms=500, max_records=10).values())
        consumer.commit()
    del TopicPartition


def shoot(url: str, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with chromium_page() as page:
        page.goto(url + "#brokers")
        page.wait_for_selector("#brokers tbody tr[data-broker]")
        for tab, ready in (
            ("brokers", "#brokers tbody tr[data-broker]"),
            ("topics", "#topics table.partitions"),
            ("groups", ".group svg.chart"),
        ):
            page.goto(url + "#" + tab)
            page.wait_for_selector(ready)
            saved.append(out / f"{tab}.png")
            page.screenshot(path=str(saved[-1]), full_page=True)
        page.goto(url + "#messages")
        page.wait_for_selector("#topic option[value=orders]", state="attached")
        page.select_option("#topic", "orders")
        page.fill("#search", "mobile")
        page.fill("#limit", "6")
        page.click("#go")
        page.wait_for_selector("#records tr.record")
        saved.append(out / "messages.png")
        page.screenshot(path=str(saved[-1]), full_page=True)
    return saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--url", help="a running console (else a cluster is started)")
    args = parser.parse_args()
    if args.url:
        for path in shoot(args.url.rstrip("/") + "/", args.out):
            print(path)
        return 0
    from deploy.cluster import LocalCluster
    from deploy.console.launch import start_console

    with tempfile.TemporaryDirectory(prefix="odradek-shots-") as tmp:
        cluster = LocalCluster(Path(tmp) / "cluster", brokers=3, session_timeout_ms=4000)
        cluster.up()
        try:
            fill(cluster.bootstrap)
            url = start_console(cluster)
            cluster.kill(3)
            time.sleep(8)  # a picture, not a test: let the ISR shrink after the session expires
            for path in shoot(url, args.out):
                print(path)
        finally:
            cluster.down()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
