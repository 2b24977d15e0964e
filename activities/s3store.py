"""An :class:`~activities.artifacts.ArtifactStore` on any S3-compatible object store.

Workers on hosts that share no disk, and the CLI that asked, meet here: blobs are
content-addressed under ``<prefix>/<namespace>/<aa>/<sha256>`` of one bucket (AWS S3,
MinIO, SeaweedFS, GCS's XML API ...), so a re-put of the same bytes by a retried
activity or another host is a HEAD and nothing more (plus, for a blob stored over
:data:`REFRESH_AFTER_S` ago, a copy onto itself that makes it young for ``navigator gc``'s
age guard), and a read checks the hash. ``blobs`` / ``delete`` serve ``navigator gc``.

Errors split the way Temporal needs them: a blob that is missing or corrupt can never
appear by retrying (:class:`ArtifactError`, non-retryable in activities); an endpoint
that is down, slow or refusing is :class:`StoreUnavailableError` — not a domain error,
so the activity's retry policy tries again (boto3's own retries are off: Temporal owns
retries, STYLE pitfall "retrying inside an activity").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from durable_navigator.activities.artifacts import REFRESH_AFTER_S, BlobInfo, make_ref
from durable_navigator.navcore.run.artifacts import SUMMARY_MAX_CHARS, ArtifactRef
from durable_navigator.navtypes.errors import ArtifactError, ConfigError

__all__ = ["S3Location", "S3ArtifactStore", "StoreUnavailableError", "parse_s3_url"]

#: seconds to open a connection / wait for an answer: a dead endpoint fails fast, the activity retries
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 60.0
_MISSING_CODES = frozenset({"404", "NoSuchKey", "NotFound"})
_SHA = re.compile(r"^[0-9a-f]{64}$")


class StoreUnavailableError(OSError):
    """The object store could not be reached or refused the request; retrying may succeed."""


@dataclass(frozen=True)
class S3Location:
    """Where the blobs live: ``s3://<bucket>/<prefix>`` (prefix may be empty) and one namespace."""

    bucket: str
    prefix: str
    namespace: str

    @property
    def base(self) -> str:
        """The key prefix every blob of this namespace shares (no trailing slash)."""
        return "/".join(part for part in (self.prefix, self.namespace) if part)

    def key(self, sha256: str) -> str:
        """The object key of a blob."""
        return f"{self.base}/{sha256[:2]}/{sha256}"

    def url(self, sha256: str | None = None) -> str:
        """``s3://bucket/<base>[/aa/sha]`` for messages and reports."""
        return f"s3://{self.bucket}/{self.key(sha256) if sha256 else self.base}"


def parse_s3_url(url: str, namespace: str) -> S3Location:
    """``s3://bucket[/prefix]`` → :class:`S3Location`; anything else is a :class:`ConfigError`."""
    parts = urlsplit(url)
    if parts.scheme != "s3":
        raise ConfigError(f"artifacts.url {url!r}: unknown scheme {parts.scheme or '(none)'!r}; use "
                          "s3://BUCKET/PREFIX (any S3-compatible store, with artifacts.endpoint_url) or leave "
                          "artifacts.url unset for the local directory")
    if not parts.netloc or parts.query or parts.fragment:
        raise ConfigError(f"artifacts.url {url!r} is not s3://BUCKET/PREFIX; name the bucket and an optional "
                          "key prefix, nothing else")
    return S3Location(bucket=parts.netloc, prefix=parts.path.strip("/"), namespace=namespace)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class S3ArtifactStore:
    """Content-addressed blobs in one bucket; the same methods as ``LocalArtifactStore``."""

    def __init__(self, location: S3Location, *, endpoint_url: str | None = None, region: str | None = None,
                 access_key: str | None = None, secret_key: str | None = None) -> None:
        self.where = location
        self.endpoint_url = endpoint_url
        # no keys given: boto3's own chain (AWS_* variables, ~/.aws, an instance or pod role)
        self._client: Any = boto3.session.Session().client(
            "s3", endpoint_url=endpoint_url, region_name=region or "us-east-1",
            aws_access_key_id=access_key, aws_secret_access_key=secret_key,
            config=Config(retries={"max_attempts": 1, "mode": "standard"}, connect_timeout=CONNECT_TIMEOUT_S,
                          read_timeout=READ_TIMEOUT_S,
                          # path-style works on every S3-compatible server; virtual hosts need DNS per bucket
                          s3={"addressing_style": "path"}),
        )

    def _unavailable(self, what: str, exc: Exception) -> StoreUnavailableError:
        detail = f"{_code(exc)} {exc.response.get('Error', {}).get('Message', '')}".strip() \
            if isinstance(exc, ClientError) else str(exc).splitlines()[0][:200]
        hint = "check the access key variables of artifacts.*_env" if isinstance(exc, ClientError) and \
            _code(exc) in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch") \
            else "check artifacts.url / artifacts.endpoint_url and that the store is up"
        where = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return StoreUnavailableError(f"object store {self.where.url()}{where}: {what} failed ({detail}); {hint}")

    def check(self) -> None:
        """Raise :class:`ConfigError` unless the bucket answers (a worker or CLI checks before any work)."""
        try:
            self._client.head_bucket(Bucket=self.where.bucket)
        except ClientError as exc:
            if _code(exc) in _MISSING_CODES or _code(exc) == "NoSuchBucket":
                raise ConfigError(f"artifact store: bucket {self.where.bucket!r} does not exist"
                                  f"{' at ' + self.endpoint_url if self.endpoint_url else ''}; create it or fix "
                                  "artifacts.url") from None
            raise ConfigError(str(self._unavailable("opening the bucket", exc))) from None
        except BotoCoreError as exc:
            raise ConfigError(str(self._unavailable("opening the bucket", exc))) from None

    def _head(self, sha256: str) -> tuple[int, datetime] | None:
        """``(size, last modified)`` of a blob, or None when it is missing."""
        try:
            head = self._client.head_object(Bucket=self.where.bucket, Key=self.where.key(sha256))
        except ClientError as exc:
            if _code(exc) in _MISSING_CODES:
                return None
            raise self._unavailable("HEAD", exc) from None
        except BotoCoreError as exc:
            raise self._unavailable("HEAD", exc) from None
        return int(head["ContentLength"]), head["LastModified"]

    def _size(self, sha256: str) -> int | None:
        head = self._head(sha256)
        return None if head is None else head[0]

    def put_bytes(self, data: bytes, media_type: str, summary: str = "") -> ArtifactRef:
        """Store ``data`` under its SHA-256 (a HEAD first: present with the right size is a no-op, but for
        refreshing its time when it was last put over :data:`REFRESH_AFTER_S` ago — gc's age guard)."""
        ref = make_ref(data, media_type, summary)
        head = self._head(ref.sha256)
        if head is not None and head[0] == ref.size:
            if (datetime.now(timezone.utc) - head[1]).total_seconds() > REFRESH_AFTER_S:
                self._touch(ref.sha256, media_type)
            return ref
        try:
            # one PUT is atomic on S3: a reader sees the whole blob or none (no temp name needed)
            self._client.put_object(Bucket=self.where.bucket, Key=self.where.key(ref.sha256), Body=data,
                                    ContentType=media_type)
        except (ClientError, BotoCoreError) as exc:
            raise self._unavailable("PUT", exc) from None
        return ref

    def put_text(self, text: str, media_type: str = "text/plain; charset=utf-8", summary: str = "") -> ArtifactRef:
        """Store UTF-8 text."""
        return self.put_bytes(text.encode("utf-8"), media_type, summary or text[:SUMMARY_MAX_CHARS])

    def get_bytes(self, ref: ArtifactRef) -> bytes:
        """Read and verify the bytes of ``ref``."""
        try:
            body = self._client.get_object(Bucket=self.where.bucket, Key=self.where.key(ref.sha256))["Body"]
            data: bytes = body.read()
        except ClientError as exc:
            if _code(exc) in _MISSING_CODES:
                raise ArtifactError(f"artifact {ref.short} is not in {self.where.url()}; every worker and the CLI "
                                    "must name the same artifacts.url and namespace") from None
            raise self._unavailable("GET", exc) from None
        except BotoCoreError as exc:
            raise self._unavailable("GET", exc) from None
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise ArtifactError(f"artifact {ref.short} at {self.where.url(ref.sha256)} is corrupt (its bytes do not "
                                "hash to its name); delete the object and re-run the step")
        return data

    def get_text(self, ref: ArtifactRef) -> str:
        """Read a UTF-8 text artifact."""
        return self.get_bytes(ref).decode("utf-8")

    def exists(self, ref: ArtifactRef) -> bool:
        """True when the object is present with the right size."""
        return self._size(ref.sha256) == ref.size

    def location(self, ref: ArtifactRef) -> str:
        """The blob's ``s3://`` URL."""
        return self.where.url(ref.sha256)

    def _touch(self, sha256: str, media_type: str) -> None:
        """Give a blob a new LastModified: a copy onto itself (S3 has no other way; its bytes stay)."""
        key = self.where.key(sha256)
        try:
            self._client.copy_object(Bucket=self.where.bucket, Key=key, CopySource={"Bucket": self.where.bucket,
                                     "Key": key}, MetadataDirective="REPLACE", ContentType=media_type)
        except (ClientError, BotoCoreError) as exc:
            raise self._unavailable("COPY (refresh)", exc) from None

    def blobs(self) -> Iterator[BlobInfo]:
        """Every blob under this namespace's prefix (objects with other names are not ours: skipped)."""
        pages = self._client.get_paginator("list_objects_v2").paginate(Bucket=self.where.bucket,
                                                                      Prefix=f"{self.where.base}/")
        try:
            for page in pages:
                for obj in page.get("Contents", []):
                    key = str(obj["Key"])
                    if key == self.where.key(key.rsplit("/", 1)[-1]) and _SHA.match(key.rsplit("/", 1)[-1]):
                        yield BlobInfo(key.rsplit("/", 1)[-1], int(obj["Size"]), obj["LastModified"])
        except (ClientError, BotoCoreError) as exc:
            raise self._unavailable("LIST", exc) from None

    def delete(self, sha256s: Iterable[str]) -> int:
        """Remove these blobs (up to 1,000 per request); how many were asked to go."""
        shas = list(sha256s)
        for start in range(0, len(shas), 1000):
            chunk = shas[start:start + 1000]
            try:
                answer = self._client.delete_objects(Bucket=self.where.bucket, Delete={
                    "Objects": [{"Key": self.where.key(sha)} for sha in chunk], "Quiet": True})
            except (ClientError, BotoCoreError) as exc:
                raise self._unavailable("DELETE", exc) from None
            if answer.get("Errors"):
                first = answer["Errors"][0]
                raise StoreUnavailableError(f"object store {self.where.url()}: deleting {first.get('Key')} failed "
                                            f"({first.get('Code')} {first.get('Message', '')}); nothing else is "
                                            "wrong: run `navigator gc` again")
        return len(shas)
