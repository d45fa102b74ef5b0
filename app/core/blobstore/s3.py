"""S3-compatible object storage (AWS S3, MinIO, Ceph RGW, ...) through boto3, for API and worker hosts that
share no directory.

* Writes: the file written at :meth:`S3Store.staging` (a spool folder under home) is uploaded by boto3's
  managed transfer, in parts of :data:`PART_BYTES` from the file (never read whole into memory), with its
  SHA-256 as the object's user metadata ``sha256``; the file then becomes a cache entry of this host.
* Reads: the object's body is streamed to a partial file in the cache a block at a time while it is hashed,
  and becomes a cache entry only when the hash equals the expected SHA-256 (the caller's, from the database,
  or else the one stored with the object): a corrupt or truncated read raises :class:`ChecksumMismatch`.
* Credentials come from boto3's usual chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, a profile, an
  instance role); the endpoint from ``FAIRSOLVE_S3_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import Any

from app.core.blobstore.base import BLOCK, BlobError, BlobStore, ChecksumMismatch, sha256_file
from app.core.blobstore.cache import ReadCache
from app.core.files import clear_stale

PART_BYTES = 8 << 20  # multipart upload: part size and the size from which an upload goes in parts
SPOOL_STALE_S = 3600.0  # a spooled file this old was left by a process that died before its upload ended


def parse_url(url: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` → ``("bucket", "some/prefix/")`` (the prefix empty or ending in ``/``)."""
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    prefix = prefix.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


class S3Store(BlobStore):
    def __init__(self, url: str, endpoint_url: str | None, cache: ReadCache, spool: Path) -> None:
        self.bucket, self.prefix = parse_url(url)
        self.endpoint_url, self.cache, self.spool = endpoint_url, cache, spool
        spool.mkdir(parents=True, exist_ok=True)
        clear_stale(spool, SPOOL_STALE_S)
        self._clients: dict[int, Any] = {}
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """One boto3 client per process (a client made before a fork is never used after it); thread-safe."""
        pid = os.getpid()
        with self._lock:
            if pid not in self._clients:
                import boto3
                from botocore.config import Config

                self._clients = {pid: boto3.client("s3", endpoint_url=self.endpoint_url, config=Config(
                    retries={"max_attempts": 5, "mode": "standard"}, max_pool_connections=16))}
            return self._clients[pid]

    def _key(self, key: str) -> str:
        return self.prefix + key

    def staging(self, key: str) -> Path:
        return self.spool / key.replace("/", "%")

    def put(self, key: str, path: Path, sha256: str | None = None) -> None:
        from boto3.s3.transfer import TransferConfig

        try:
            sha256 = sha256 or sha256_file(path)
            self.client.upload_file(str(path), self.bucket, self._key(key), ExtraArgs={"Metadata": {"sha256": sha256}},
                                    Config=TransferConfig(multipart_threshold=PART_BYTES,
                                                          multipart_chunksize=PART_BYTES, max_concurrency=4,
                                                          io_chunksize=BLOCK))
        except BaseException:
            Path(path).unlink(missing_ok=True)
            raise
        self.cache.adopt(Path(path), sha256, _name(key))

    def fetch(self, key: str, sha256: str | None = None) -> Path:
        name = _name(key)
        expected = sha256 or self._stored_sha256(key)
        if (hit := self.cache.get(expected, name)) is not None:
            return hit
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except self.client.exceptions.NoSuchKey as exc:
            raise BlobError(f"no object {key!r} in the store") from exc
        if sha256 is None:  # the object may have been replaced since the HEAD: check against what was read
            expected = response.get("Metadata", {}).get("sha256") or expected
        partial = self.cache.partial(expected, name)
        digest = hashlib.sha256()
        try:
            with open(partial, "wb") as out:
                for block in response["Body"].iter_chunks(BLOCK):
                    digest.update(block)
                    out.write(block)
            if digest.hexdigest() != expected:
                raise ChecksumMismatch(f"object {key!r}: SHA-256 {digest.hexdigest()} read, {expected} stored")
            return self.cache.adopt(partial, expected, name)
        finally:
            partial.unlink(missing_ok=True)

    def _stored_sha256(self, key: str) -> str:
        from botocore.exceptions import ClientError

        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            raise BlobError(f"no object {key!r} in the store ({exc.response['Error'].get('Code')})") from exc
        sha256 = head.get("Metadata", {}).get("sha256")
        if not sha256:
            raise BlobError(f"object {key!r} has no sha256 metadata: not written by FairSolve")
        return sha256

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def delete_prefix(self, prefix: str) -> None:
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self._key(prefix))
        for page in pages:
            keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
            if keys:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})

    def prepare(self) -> None:
        """Create the bucket when it does not exist (a fresh MinIO in docker compose)."""
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if exc.response["Error"].get("Code") not in ("404", "NoSuchBucket", "NotFound"):
                raise
            try:
                self.client.create_bucket(Bucket=self.bucket)
            except self.client.exceptions.BucketAlreadyOwnedByYou:
                pass


def _name(key: str) -> str:
    return key.rsplit("/", 1)[-1]
