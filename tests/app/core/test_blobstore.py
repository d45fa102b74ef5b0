"""The storage interface against both backends: the local directory and a real S3 server over HTTP
(``bench.common.objectstore``): the same contract, multipart uploads, checksums verified on read, a bounded LRU cache."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from app.core.blobstore import ChecksumMismatch, sha256_file
from app.core.blobstore.base import BlobError
from app.core.blobstore.cache import ReadCache
from app.core.blobstore.local import LocalStore
from app.core.blobstore.s3 import PART_BYTES, S3Store
from bench.common.objectstore import object_store


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with object_store(tmp_path_factory.mktemp("s3") / "moto.log") as store:
        yield store


def s3_host(server, bucket: str, home: Path, cache_bytes: int = 1 << 30) -> S3Store:
    """The store as one host sees it: its own cache and spool under its own home."""
    return S3Store(f"s3://{bucket}/pre/fix", server.endpoint, ReadCache(home / "cache", cache_bytes), home / "spool")


@pytest.fixture
def aws_env(server, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", server.key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        return LocalStore(tmp_path / "storage")
    request.getfixturevalue("aws_env")
    server = request.getfixturevalue("server")
    return s3_host(server, server.new_bucket(), tmp_path)


def write(store, key: str, data: bytes) -> None:
    path = store.staging(key)
    path.write_bytes(data)
    store.put(key, path)


def test_the_contract_of_both_backends(store):
    write(store, "checkpoints/j.1.safetensors", b"first")
    write(store, "checkpoints/j.2.safetensors", b"second")
    write(store, "artifacts/j/1/model.safetensors", b"weights")
    write(store, "artifacts/j/2/model.safetensors", b"other weights")
    assert store.fetch("checkpoints/j.1.safetensors").read_bytes() == b"first"
    write(store, "checkpoints/j.1.safetensors", b"replaced")  # a key rewritten: readers see the new bytes
    assert store.fetch("checkpoints/j.1.safetensors").read_bytes() == b"replaced"
    store.delete_prefix("artifacts/j/1/")
    assert store.fetch("artifacts/j/2/model.safetensors").read_bytes() == b"other weights"
    store.delete_prefix("checkpoints/j.")
    store.delete("artifacts/j/2/model.safetensors")
    store.delete("never/written")
    for key in ("checkpoints/j.1.safetensors", "checkpoints/j.2.safetensors", "artifacts/j/1/model.safetensors",
                "artifacts/j/2/model.safetensors"):
        if isinstance(store, LocalStore):
            assert not store.fetch(key).exists()
        else:
            with pytest.raises(BlobError):
                s3_host_of(store).fetch(key)


def s3_host_of(store: S3Store) -> S3Store:
    """Another host on the same bucket, with an empty cache (so a read goes to the server)."""
    home = store.spool.parent / f"other-{os.urandom(4).hex()}"
    return S3Store(f"s3://{store.bucket}/{store.prefix}", store.endpoint_url, ReadCache(home / "cache", 1 << 30),
                   home / "spool")


def test_a_large_file_goes_up_in_parts_and_down_in_blocks_without_being_held_in_memory(server, aws_env, tmp_path):
    bucket = server.new_bucket()
    writer, reader = s3_host(server, bucket, tmp_path / "a"), s3_host(server, bucket, tmp_path / "b")
    size = 6 * PART_BYTES + 12345
    path = writer.staging("datasets/big.csv")
    with open(path, "wb") as fh:
        for _ in range(size // (1 << 20) + 1):
            fh.write(os.urandom(1 << 20))
        fh.truncate(size)
    sha = sha256_file(path)
    tracemalloc.start()
    writer.put("datasets/big.csv", path, sha)
    _, up_peak = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    got = reader.fetch("datasets/big.csv", sha)
    _, down_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    head = server.client().head_object(Bucket=bucket, Key="pre/fix/datasets/big.csv")
    assert head["ETag"].strip('"').endswith("-7")  # a multipart upload of seven parts
    assert head["Metadata"]["sha256"] == sha and head["ContentLength"] == size
    assert sha256_file(got) == sha and got.parent == tmp_path / "b" / "cache"
    # the upload holds at most its concurrent parts (4 of 8 MiB), the download a few blocks: never the file
    assert up_peak < 5 * PART_BYTES < size and down_peak < size / 8, (up_peak, down_peak)
    assert not path.exists()  # the spooled file became the writer's cache entry
    assert writer.fetch("datasets/big.csv", sha).parent == tmp_path / "a" / "cache"


def test_bytes_that_do_not_match_the_checksum_are_never_handed_to_a_reader(server, aws_env, tmp_path):
    bucket = server.new_bucket()
    writer = s3_host(server, bucket, tmp_path / "a")
    write(writer, "artifacts/j/1/predictions.parquet", b"the real predictions")
    expected = sha256_file(writer.fetch("artifacts/j/1/predictions.parquet"))
    # damaged in the store, metadata kept (bit rot, a truncated copy, another writer)
    server.client().put_object(Bucket=bucket, Key="pre/fix/artifacts/j/1/predictions.parquet", Body=b"tampered",
                               Metadata={"sha256": expected})
    reader = s3_host(server, bucket, tmp_path / "b")
    for sha in (expected, None):  # the database's checksum, or the one stored with the object
        with pytest.raises(ChecksumMismatch):
            reader.fetch("artifacts/j/1/predictions.parquet", sha)
    assert list((tmp_path / "b" / "cache").iterdir()) == []  # nothing half-read or wrong is left to reuse


def test_the_read_cache_is_bounded_by_bytes_and_drops_the_least_recently_used(server, aws_env, tmp_path):
    bucket = server.new_bucket()
    writer = s3_host(server, bucket, tmp_path / "a")
    shas = {}
    for i in range(5):
        write(writer, f"datasets/d{i}.csv", bytes([i]) * 1000)
        shas[i] = sha256_file(writer.fetch(f"datasets/d{i}.csv"))
    reader = s3_host(server, bucket, tmp_path / "b", cache_bytes=3000)
    for i in (0, 1, 2):
        reader.fetch(f"datasets/d{i}.csv", shas[i])
    os.utime(reader.cache.entry(shas[1], "d1.csv"), (1, 1))  # d1: used longest ago
    os.utime(reader.cache.entry(shas[0], "d0.csv"), (2, 2))
    reader.fetch("datasets/d0.csv", shas[0])  # a hit: d0 becomes the most recently used
    reader.fetch("datasets/d3.csv", shas[3])
    cached = sorted(p.name.split("-", 1)[1] for p in reader.cache.folder.iterdir())
    assert cached == ["d0.csv", "d2.csv", "d3.csv"]
    assert sum(p.stat().st_size for p in reader.cache.folder.iterdir()) <= 3000
    server.client().delete_object(Bucket=bucket, Key="pre/fix/datasets/d0.csv")
    assert reader.fetch("datasets/d0.csv", shas[0]).read_bytes() == bytes([0]) * 1000  # served from the cache
    tiny = s3_host(server, bucket, tmp_path / "c", cache_bytes=10)  # one object over the bound is still usable
    assert tiny.fetch("datasets/d4.csv", shas[4]).read_bytes() == bytes([4]) * 1000
    assert len(list(tiny.cache.folder.iterdir())) == 1


def test_the_storage_url_chooses_the_backend_and_is_checked(tmp_path):
    from pydantic import ValidationError

    from app.core.blobstore import blobs
    from app.core.settings import Settings

    assert isinstance(blobs(Settings(FAIRSOLVE_HOME=str(tmp_path))), LocalStore)
    s3 = blobs(Settings(FAIRSOLVE_HOME=str(tmp_path), FAIRSOLVE_STORAGE_URL="s3://fair-bucket/some/prefix"))
    assert isinstance(s3, S3Store) and (s3.bucket, s3.prefix) == ("fair-bucket", "some/prefix/")
    assert s3.cache.folder == tmp_path.resolve() / "storage" / "cache"
    for bad in ("http://fair-bucket/x", "s3://", "s3://UPPER/x", "/srv/storage"):
        with pytest.raises(ValidationError, match="FAIRSOLVE_STORAGE_URL"):
            Settings(FAIRSOLVE_STORAGE_URL=bad)
