"""A pytest plugin for running Ceph's s3-tests against this store, loaded by run.sh (-p store_plugin).

- Cleanup: s3-tests empties its buckets before and after every test by listing object versions,
  which the store refuses (501, it keeps no versions). Here a bucket is emptied as a store without
  versions is: list with ListObjectsV2, delete in batches, abort the multipart uploads, delete the
  bucket. (s3-tests' files are left as they are: its nuke_bucket is replaced when this loads.)
- Results: one line per test in the file named by S3TESTS_RESULTS, "<outcome>\\t<test id>\\t<first
  line of the failure>", outcome being passed, failed, error (the test's setup or teardown failed)
  or skipped.
"""

import os

import pytest


def _nuke_bucket(client, bucket):
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
        if objects:
            client.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
    for page in client.get_paginator("list_multipart_uploads").paginate(Bucket=bucket):
        for upload in page.get("Uploads", []):
            client.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
    client.delete_bucket(Bucket=bucket)


def pytest_configure(config):
    import s3tests.functional

    s3tests.functional.nuke_bucket = _nuke_bucket


_outcomes = {}


def _first_line(report):
    if not report.longrepr:
        return ""
    text = getattr(report.longrepr, "reprcrash", None)
    text = text.message if text is not None else str(report.longrepr)
    return " ".join(text.split())[:300]


@pytest.hookimpl
def pytest_runtest_logreport(report):
    nodeid = report.nodeid
    if report.when == "call":
        if nodeid not in _outcomes:
            _outcomes[nodeid] = (report.outcome, _first_line(report))
    elif report.failed:
        # A failure in setup, or in teardown after the test itself passed, is an error.
        if nodeid not in _outcomes or _outcomes[nodeid][0] == "passed":
            _outcomes[nodeid] = ("error", f"{report.when}: {_first_line(report)}")
    elif report.skipped and nodeid not in _outcomes:
        _outcomes[nodeid] = ("skipped", _first_line(report))


def pytest_sessionfinish(session):
    path = os.environ.get("S3TESTS_RESULTS")
    if not path:
        return
    with open(path, "w", encoding="utf-8") as out:
        for nodeid, (outcome, reason) in sorted(_outcomes.items()):
            out.write(f"{outcome}\t{nodeid}\t{reason}\n")
