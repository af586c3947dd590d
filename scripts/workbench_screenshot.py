"""Save the screenshots of the workbench's docs page: start ``kgplus ui`` on the given sources, ask in headless
Chromium (Debian's chromium + chromium-driver), open the first source, save ``docs/workbench.png``; then ask a KG
question and save ``docs/workbench-kg.png``. Loads the local LLM: run it under the LLM lock on shared machines.

    python scripts/workbench_screenshot.py --index DIR --kg-store URI [--glossary FILE] [--table NAME=PATH] [--llm SPEC]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _ask(driver: webdriver.Chrome, question: str) -> None:
    box = WebDriverWait(driver, 30).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "input[aria-label='Question']"))
    )
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(question)
    driver.find_element(By.XPATH, "//button[.//p[text()='Ask']]").click()

    def summaries(d: webdriver.Chrome) -> str:
        return " | ".join(e.text for e in d.find_elements(By.CSS_SELECTOR, "[data-testid='stExpander'] summary"))

    WebDriverWait(driver, 60).until(lambda d: "Routing, retrieving" in summaries(d))  # this question's run
    WebDriverWait(driver, 600).until(
        lambda d: (
            "answered in" in summaries(d)
            and "[1]" in summaries(d)
            or "knowledge-graph paths" in summaries(d)
            and "answered in" in summaries(d)
        )
    )


def main() -> int:
    """Start the workbench, ask, save the screenshots."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", required=True)
    parser.add_argument("--kg-store")
    parser.add_argument("--glossary")
    parser.add_argument("--table", action="append", default=[])
    parser.add_argument("--llm", default="qwen2.5-coder-0.5b")
    args = parser.parse_args()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "llama_index_kgplus.cli", "ui", "--index", args.index, "--port", str(port),
               "--llm", args.llm, "--top-k", "3", "--context-budget", "512"]  # fmt: skip
    if args.kg_store:
        command += ["--kg-store", args.kg_store]
    if args.glossary:
        command += ["--glossary", args.glossary]
    for table in args.table:
        command += ["--table", table]
    proc = subprocess.Popen(command, start_new_session=True)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,1500", f"--user-data-dir={tempfile.mkdtemp()}"]:  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path="/usr/bin/chromedriver"), options=options)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        driver.get(f"http://127.0.0.1:{port}")
        DOCS.mkdir(exist_ok=True)
        _ask(driver, "How do I create a virtual environment, and how do I activate it?")
        [e for e in driver.find_elements(By.CSS_SELECTOR, "[data-testid='stExpander'] summary") if "[1]" in e.text][
            0
        ].click()
        time.sleep(1.5)
        driver.save_screenshot(str(DOCS / "workbench.png"))
        if args.kg_store:
            _ask(driver, "How is a virus related to a disease or syndrome?")
            [e for e in driver.find_elements(By.CSS_SELECTOR, "[data-testid='stExpander'] summary")
             if "knowledge-graph" in e.text][0].click()  # fmt: skip
            time.sleep(3)
            driver.save_screenshot(str(DOCS / "workbench-kg.png"))
    finally:
        driver.quit()
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
