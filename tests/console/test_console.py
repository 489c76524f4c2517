"""End-to-end test of the console at /_lode/ in headless Chromium.

Starts `lode serve` on an ephemeral port with a fresh data directory, indexes a few
documents, opens the console, checks the overview lists the index with its document count,
runs a search through the request console (method, path, body, Send) and checks the rendered
response holds the hits computed here from the documents, then saves a screenshot.

Environment:
  LODE_BIN          server binary (default <repo>/target/debug/lode)
  CHROMIUM          browser binary (default /usr/bin/chromium)
  CHROMEDRIVER      driver binary (default /usr/bin/chromedriver)
  CONSOLE_SCREENSHOT  where to save the screenshot (default <repo>/target/console-screenshot.png)

Every wait is bounded; the whole run is a few seconds once the browser is installed.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LODE_BIN = os.environ.get("LODE_BIN", os.path.join(REPO, "target", "debug", "lode"))
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
SCREENSHOT = os.environ.get(
    "CONSOLE_SCREENSHOT", os.path.join(REPO, "target", "console-screenshot.png"))
STARTUP_TIMEOUT = 60
WAIT = 20  # seconds, for anything the page does

INDEX = "books"
DOCS = [
    {"title": "The Left Hand of Darkness", "genre": "scifi", "year": 1969, "pages": 304},
    {"title": "Dune", "genre": "scifi", "year": 1965, "pages": 412},
    {"title": "Middlemarch", "genre": "classic", "year": 1871, "pages": 880},
    {"title": "Neuromancer", "genre": "scifi", "year": 1984, "pages": 271},
    {"title": "Persuasion", "genre": "classic", "year": 1817, "pages": 249},
    {"title": "The Dispossessed", "genre": "scifi", "year": 1974, "pages": 387},
    {"title": "Beloved", "genre": "novel", "year": 1987, "pages": 324},
]
QUERY = {
    "query": {"bool": {"filter": [{"term": {"genre": "scifi"}},
                                  {"range": {"pages": {"gte": 300}}}]}},
    "sort": [{"year": "asc"}],
}


def expected_ids():
    """The search's hits, computed from the documents rather than asked of the server."""
    hits = [(d["year"], str(i)) for i, d in enumerate(DOCS)
            if d["genre"] == "scifi" and d["pages"] >= 300]
    return [doc_id for _, doc_id in sorted(hits)]


def call(url, method="GET", body=None, content_type="application/json"):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("content-type", content_type)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


def start_server(data_dir):
    proc = subprocess.Popen(
        [LODE_BIN, "serve", "-E", "http.port=0", "-E", "path.data=" + data_dir],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    found = {}
    ready = threading.Event()

    def drain():
        for raw in iter(proc.stdout.readline, b""):
            m = re.search(r"https?://[A-Za-z0-9.\-\[\]:]+:\d+", raw.decode("utf-8", "replace"))
            if m and "url" not in found:
                found["url"] = m.group(0)
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(STARTUP_TIMEOUT) or "url" not in found:
        proc.kill()
        sys.exit("test-console: lode serve did not report its address within %ds" % STARTUP_TIMEOUT)
    return proc, found["url"]


def load(url):
    call(url + "/" + INDEX, "PUT", {"mappings": {"properties": {
        "title": {"type": "text"}, "genre": {"type": "keyword"},
        "year": {"type": "integer"}, "pages": {"type": "integer"}}}})
    lines = []
    for i, d in enumerate(DOCS):
        lines.append(json.dumps({"index": {"_index": INDEX, "_id": str(i)}}))
        lines.append(json.dumps(d))
    out = call(url + "/_bulk?refresh=true", "POST", ("\n".join(lines) + "\n").encode(),
               "application/x-ndjson")
    assert not out["errors"], out


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1400", "--no-first-run", "--disable-extensions"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver and browser: Selenium Manager never runs, so nothing is downloaded.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    return driver


def main():
    data_dir = tempfile.mkdtemp(prefix="lode-console-")
    proc, url = start_server(data_dir)
    driver = None
    try:
        load(url)
        driver = browser()
        wait = WebDriverWait(driver, WAIT, poll_frequency=0.2)

        # The bare path redirects to the directory, whose page loads its script and styles.
        driver.get(url + "/_lode")
        assert driver.current_url == url + "/_lode/", driver.current_url
        assert driver.title == "Lode console", driver.title

        # The overview lists the index with its document count.
        docs_cell = (By.CSS_SELECTOR, 'tr[data-index="%s"] td.docs' % INDEX)
        wait.until(lambda d: d.find_elements(*docs_cell)
                   and d.find_element(*docs_cell).text == str(len(DOCS)))
        assert driver.find_element(By.ID, "health").text in ("green", "yellow")

        # A search through the request console.
        Select(driver.find_element(By.ID, "method")).select_by_visible_text("POST")
        path = driver.find_element(By.ID, "path")
        path.clear()
        path.send_keys("/%s/_search" % INDEX)
        body = driver.find_element(By.ID, "body")
        body.clear()
        # set the value directly: send_keys would be slow and textarea auto-indent is irrelevant
        driver.execute_script("arguments[0].value = arguments[1]", body, json.dumps(QUERY, indent=2))
        driver.find_element(By.ID, "send").click()
        status = driver.find_element(By.ID, "response-status")
        wait.until(lambda d: status.text.startswith("200"))
        shown = json.loads(driver.find_element(By.ID, "response-body").text)
        got = [h["_id"] for h in shown["hits"]["hits"]]
        want = expected_ids()
        assert got == want, "console shows hits %s, expected %s" % (got, want)
        assert shown["hits"]["total"]["value"] == len(want), shown["hits"]["total"]

        # The request is in the history, and the page stored it.
        wait.until(lambda d: any(li.text.startswith("POST /%s/_search" % INDEX)
                                 for li in d.find_elements(By.CSS_SELECTOR, "#history li")))
        stored = driver.execute_script("return localStorage.getItem('lode.console.history')")
        assert json.loads(stored)[0]["path"] == "/%s/_search" % INDEX

        # A GET with a body goes through ES's `source` parameter and gives the same hits.
        Select(driver.find_element(By.ID, "method")).select_by_visible_text("GET")
        driver.find_element(By.ID, "send").click()
        wait.until(lambda d: status.text.startswith("200")
                   and d.find_element(By.ID, "response-body").text.strip().startswith("{"))
        shown = json.loads(driver.find_element(By.ID, "response-body").text)
        assert [h["_id"] for h in shown["hits"]["hits"]] == want

        # Double-clicking a past request runs it again, as it was sent.
        post = [li for li in driver.find_elements(By.CSS_SELECTOR, "#history li")
                if li.text.startswith("POST /%s/_search" % INDEX)][0]
        driver.execute_script("arguments[0].textContent = ''", status)
        ActionChains(driver).double_click(post).perform()
        wait.until(lambda d: status.text.startswith("200"))
        assert Select(driver.find_element(By.ID, "method")).first_selected_option.text == "POST"
        shown = json.loads(driver.find_element(By.ID, "response-body").text)
        assert [h["_id"] for h in shown["hits"]["hits"]] == want

        # Searches from outside the page show in the charts: a search rate and search
        # latency percentiles over the next polling window (a poll every 2 s).
        def searched(d):
            for _ in range(10):
                call(url + "/%s/_search" % INDEX, "POST", QUERY)
            return d.execute_script(
                "return series.searchRate.some(v => v > 0) && series.search[0].some(v => v != null)")
        wait.until(searched)
        p50, p99 = driver.execute_script("return [series.search[0], series.search[2]]")
        assert all(a is None or (0 < a <= b) for a, b in zip(p50, p99)), (p50, p99)

        # one more poll, so the screenshot's charts have lines rather than single points
        polls = driver.execute_script("return series.time.length")
        wait.until(lambda d: d.execute_script("return series.time.length") > polls)

        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not severe, "errors in the page: %s" % severe

        os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
        driver.save_screenshot(SCREENSHOT)
        print("test-console: ok (%d hits shown as computed; screenshot %s)" % (len(want), SCREENSHOT))
    except Exception:
        if driver is not None:
            # what the page showed, for the failure report
            os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
            driver.save_screenshot(SCREENSHOT)
            print("test-console: FAILED; screenshot %s; page error: %r; browser log: %s" % (
                SCREENSHOT, driver.find_element(By.ID, "poll-error").text,
                driver.get_log("browser")), file=sys.stderr)
        raise
    finally:
        if driver is not None:
            driver.quit()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
