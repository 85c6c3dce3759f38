"""Writes selection.txt: the tests of Ceph's s3-tests that judge what this store offers.

Run from a checkout of s3-tests at the commit named in selection.txt (run.sh does, with --select).
The rule, applied to the test functions' names and pytest markers:

- s3tests/functional/test_s3.py: every test, except those of a feature the store refuses with
  501 (by marker, or by a word in the name: ACLs, policies, CORS, POST object, versioning,
  lifecycle, logging, encryption, Object Lock, tagging, website, public access blocks, restore,
  torrents, ownership, storage classes, append, notifications), and Ceph's own extensions (usage
  statistics, the extended bucket HEAD). What is left are the groups the store serves: object
  put/get/head/delete and copy, listings v1 and v2, multipart uploads, bucket create/delete/head
  and listing, ranges, conditional requests, checksums, chunked uploads, error codes.
- s3tests/functional/test_headers.py: the tests marked auth_common (object and bucket writes with
  missing, empty or bad Content-MD5, Content-Length, Expect, Content-Type, Authorization and date
  headers, signed with Signature V4: the error codes of a malformed request), except ACL ones.
  The auth_aws2 tests sign with Signature V2, which the store does not speak.
"""

import ast
import re
import sys

REFUSED_MARKERS = {
    "appendobject", "bucket_encryption", "bucket_logging", "bucket_logging_cleanup", "bucket_policy",
    "cloud_restore", "cloud_transition", "delete_marker", "encryption", "fails_without_logging_rollover",
    "iam_account", "iam_user", "lifecycle", "lifecycle_expiration", "lifecycle_transition", "object_lock",
    "object_ownership", "s3select", "s3website", "sse_s3", "storage_class", "tagging", "target_by_bucket",
    "versioning",
}
REFUSED_NAME = re.compile(
    r"acl|cors|post_object|version|policy|lifecycle|logging|sse|encrypt|kms|_enc$|object_lock|retention"
    r"|legal_hold|bypass|tag|website|public|restore|torrent|ownership|storage_class|append|notification"
    r"|replication|cloud|read_through|delete_marker|anon"
)
CEPH_ONLY = {"test_account_usage", "test_head_bucket_usage", "test_bucket_head_extended"}


def tests(path):
    """(name, markers) of every top-level test function of a file, in file order."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            marks = set()
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute):
                    if target.value.attr == "mark":
                        marks.add(target.attr)
            yield node.name, marks


def main(commit):
    selected = []
    for name, marks in tests("s3tests/functional/test_s3.py"):
        if marks & REFUSED_MARKERS or REFUSED_NAME.search(name) or name in CEPH_ONLY:
            continue
        selected.append(f"s3tests/functional/test_s3.py::{name}")
    for name, marks in tests("s3tests/functional/test_headers.py"):
        if "auth_common" in marks and not REFUSED_NAME.search(name):
            selected.append(f"s3tests/functional/test_headers.py::{name}")
    print(f"# Ceph's s3-tests at commit {commit}: the tests of the groups this store serves")
    print("# (written by make_selection.py, which says how they are chosen; one pytest id a line)")
    for test in selected:
        print(test)


if __name__ == "__main__":
    main(sys.argv[1])
