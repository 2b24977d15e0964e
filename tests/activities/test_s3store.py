"""The S3 artifact store against a real S3-compatible server (SeaweedFS), and its configuration.

Round trip, idempotent re-put, a missing and a corrupt blob, per-namespace keys; the ``artifacts:``
section of navigator.yaml opening it (key variables by name only) and each bad setting refused in
one line before any work.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import pytest

from durable_navigator.activities.artifacts import LocalArtifactStore, make_ref
from durable_navigator.activities.s3store import S3ArtifactStore, StoreUnavailableError, parse_s3_url
from durable_navigator.cli.config import load_config
from durable_navigator.cli.stores import open_artifact_store
from durable_navigator.navtypes.errors import ArtifactError, ConfigError
from tests.support.seaweed import ACCESS_KEY, BUCKET, SECRET_KEY, SeaweedS3

KEYS = {"S3_TEST_ACCESS": ACCESS_KEY, "S3_TEST_SECRET": SECRET_KEY}


def _store(s3: SeaweedS3, namespace: str = "default", prefix: str | None = None) -> S3ArtifactStore:
    prefix = prefix or f"t-{uuid.uuid4().hex[:8]}"
    return S3ArtifactStore(parse_s3_url(f"s3://{BUCKET}/{prefix}", namespace), endpoint_url=s3.endpoint_url,
                           access_key=ACCESS_KEY, secret_key=SECRET_KEY)


def _config(tmp_path: Path, body: str, env: dict[str, str] | None = None):  # noqa: ANN202 - NavigatorConfig
    path = tmp_path / "navigator.yaml"
    path.write_text(body)
    return load_config(path, env=env or {}, cwd=tmp_path)


def test_round_trip_keys_by_content_under_prefix_and_namespace(s3_server: SeaweedS3) -> None:
    store = _store(s3_server, namespace="team-a", prefix="nav/v1")
    data = b"# context\n" + uuid.uuid4().bytes
    ref = store.put_bytes(data, "text/markdown", "a pack")
    assert ref.sha256 == hashlib.sha256(data).hexdigest() and ref.size == len(data)
    assert store.get_bytes(ref) == data
    assert store.exists(ref)
    key = f"nav/v1/team-a/{ref.sha256[:2]}/{ref.sha256}"
    assert store.location(ref) == f"s3://{BUCKET}/{key}"
    head = s3_server.client().head_object(Bucket=BUCKET, Key=key)
    assert head["ContentLength"] == len(data) and head["ContentType"] == "text/markdown"
    # another namespace is another key space: the same ref is not there
    assert not _store(s3_server, namespace="team-b", prefix="nav/v1").exists(ref)
    assert store.get_text(store.put_text("héllo")) == "héllo"


def test_a_re_put_of_the_same_bytes_writes_nothing(s3_server: SeaweedS3) -> None:
    store = _store(s3_server)
    data = uuid.uuid4().bytes * 100
    ref = store.put_bytes(data, "application/octet-stream")
    key = store.where.key(ref.sha256)
    first = s3_server.client().head_object(Bucket=BUCKET, Key=key)
    # a marker of the first write: a re-put that PUT again would drop it (S3 replaces object metadata)
    s3_server.client().copy_object(Bucket=BUCKET, Key=key, CopySource={"Bucket": BUCKET, "Key": key},
                                   Metadata={"first": "yes"}, MetadataDirective="REPLACE")
    assert store.put_bytes(data, "application/octet-stream") == ref
    again = s3_server.client().head_object(Bucket=BUCKET, Key=key)
    assert again["Metadata"] == {"first": "yes"}, (first, again)


def test_a_missing_blob_is_a_clear_artifact_error(s3_server: SeaweedS3) -> None:
    store = _store(s3_server)
    ref = make_ref(b"never stored " + uuid.uuid4().bytes, "text/plain", "")
    assert not store.exists(ref)
    with pytest.raises(ArtifactError, match=r"is not in s3://navigator-artifacts/t-.*/default; every worker"):
        store.get_bytes(ref)


def test_a_corrupt_blob_is_detected(s3_server: SeaweedS3) -> None:
    store = _store(s3_server)
    ref = store.put_bytes(b"the real bytes", "text/plain")
    s3_server.client().put_object(Bucket=BUCKET, Key=store.where.key(ref.sha256), Body=b"the fake bytes")
    with pytest.raises(ArtifactError, match=r"is corrupt .* delete the object and re-run the step"):
        store.get_bytes(ref)


def test_a_store_that_refuses_the_key_is_retryable_not_a_domain_error(s3_server: SeaweedS3) -> None:
    store = S3ArtifactStore(parse_s3_url(f"s3://{BUCKET}/x", "default"), endpoint_url=s3_server.endpoint_url,
                            access_key=ACCESS_KEY, secret_key="wrong-secret")
    with pytest.raises(StoreUnavailableError, match="check the access key variables"):
        store.put_bytes(b"x", "text/plain")


def test_the_config_opens_the_store_with_keys_named_by_variable(s3_server: SeaweedS3, tmp_path: Path) -> None:
    config = _config(tmp_path, f"artifacts:\n  url: s3://{BUCKET}/cfg\n  endpoint_url: {s3_server.endpoint_url}\n"
                               "  access_key_env: S3_TEST_ACCESS\n  secret_key_env: S3_TEST_SECRET\n"
                               "temporal:\n  namespace: ns1\n")
    store = open_artifact_store(config, env=KEYS)
    ref = store.put_bytes(b"via config", "text/plain")
    assert store.location(ref).startswith(f"s3://{BUCKET}/cfg/ns1/")
    # the public view names the variables, never their values
    assert SECRET_KEY not in str(config.public_dict()) and "S3_TEST_SECRET" in str(config.public_dict())


@pytest.mark.parametrize(("body", "env", "message"), [
    ("artifacts:\n  url: gs://b/p\n", {}, "unknown scheme 'gs'; use s3://BUCKET/PREFIX"),
    ("artifacts:\n  url: s3://{bucket}/p\n  endpoint_url: {endpoint}\n  access_key_env: S3_TEST_ACCESS\n"
     "  secret_key_env: S3_TEST_SECRET\n", {"S3_TEST_ACCESS": ACCESS_KEY}, "names S3_TEST_SECRET, which is not set"),
    ("artifacts:\n  url: s3://no-such-bucket-{uid}/p\n  endpoint_url: {endpoint}\n  access_key_env: S3_TEST_ACCESS\n"
     "  secret_key_env: S3_TEST_SECRET\n", KEYS, "bucket 'no-such-bucket-"),
    ("artifacts:\n  url: s3://{bucket}/p\n  endpoint_url: http://127.0.0.1:9\n  access_key_env: S3_TEST_ACCESS\n"
     "  secret_key_env: S3_TEST_SECRET\n", KEYS, "opening the bucket failed"),
])
def test_bad_store_settings_are_one_line_before_any_work(s3_server: SeaweedS3, tmp_path: Path, body: str,
                                                         env: dict[str, str], message: str) -> None:
    config = _config(tmp_path, body.format(bucket=BUCKET, endpoint=s3_server.endpoint_url, uid=uuid.uuid4().hex[:6]))
    with pytest.raises(ConfigError, match=message) as err:
        open_artifact_store(config, env=env)
    assert "\n" not in str(err.value) and SECRET_KEY not in str(err.value)


@pytest.mark.parametrize(("body", "message"), [
    ("artifacts:\n  url: s3://b/p\n  secret_key: abc\n", "artifacts.secret_key must not be stored in a file"),
    ("artifacts:\n  url: s3://b/p\n  access_key_env: A\n", "name both access_key_env and secret_key_env"),
    ("artifacts:\n  endpoint_url: http://h:1\n", "need url: s3://BUCKET/PREFIX"),
])
def test_bad_artifacts_sections_are_refused_when_read(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _config(tmp_path, body)


def test_no_url_is_the_local_directory(tmp_path: Path) -> None:
    store = open_artifact_store(_config(tmp_path, f"artifacts:\n  dir: {tmp_path / 'blobs'}\n"))
    assert isinstance(store, LocalArtifactStore) and store.root == (tmp_path / "blobs").resolve()


@pytest.mark.parametrize("kind", ["s3", "local"])
def test_blobs_are_listed_deleted_and_a_re_put_refreshes_their_time(
    kind: str, s3_server: SeaweedS3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``navigator gc`` stands on: list (only this namespace's blobs), delete, and the age a re-put resets."""
    import time

    from durable_navigator.activities import artifacts, s3store

    store = _store(s3_server) if kind == "s3" else LocalArtifactStore(tmp_path / "artifacts")
    refs = [store.put_bytes(f"blob {i} {uuid.uuid4()}".encode(), "text/plain") for i in range(3)]
    if kind == "s3":  # an object of another namespace and a foreign name under ours are not ours to list
        _store(s3_server, namespace="other", prefix=store.where.prefix).put_bytes(b"theirs", "text/plain")
        s3_server.client().put_object(Bucket=BUCKET, Key=f"{store.where.base}/notes.txt", Body=b"x")
    else:
        (tmp_path / "artifacts" / refs[0].sha256[:2] / ".tmp-half-written").write_bytes(b"x")
    listed = {b.sha256: b for b in store.blobs()}
    assert set(listed) == {r.sha256 for r in refs}
    assert all(listed[r.sha256].size == r.size for r in refs)
    first = listed[refs[0].sha256].modified
    time.sleep(1.1)
    # within REFRESH_AFTER_S a re-put is a HEAD only; past it, the blob's time becomes now
    store.put_bytes(store.get_bytes(refs[0]), "text/plain")
    assert {b.sha256: b for b in store.blobs()}[refs[0].sha256].modified == first
    monkeypatch.setattr(s3store if kind == "s3" else artifacts, "REFRESH_AFTER_S", 0.0)
    store.put_bytes(store.get_bytes(refs[0]), "text/plain")
    refreshed = {b.sha256: b for b in store.blobs()}[refs[0].sha256]
    assert refreshed.modified > first and store.get_bytes(refs[0])  # same bytes, younger
    assert store.delete([refs[0].sha256, refs[1].sha256]) == 2
    assert [b.sha256 for b in store.blobs()] == [refs[2].sha256]
    assert not store.exists(refs[0]) and store.exists(refs[2])
