#!/usr/bin/env python3
"""Independent vectors for the workbench commit digests.

Computes, with hashlib and the formulas of docs/workbench.md ("Commits")
and the seed schema, the values workbench/history_vectors_test.go checks
the Go code against. Run from the repository root:

    python3 workbench/testdata/history_vectors.py > workbench/testdata/history-vectors.json

The output is one JSON object keyed by vector name; each vector holds its
inputs and the expected outputs.
"""
import hashlib
import json
import struct


def u8(n):
    return struct.pack(">B", n)


def u32(n):
    return struct.pack(">I", n)


def u64(n):
    return struct.pack(">Q", n)


def len64(b):
    return u64(len(b)) + b


def sha(b):
    return hashlib.sha256(b).digest()


def uri(d):
    return "sha256:" + d.hex()


def canonical(v):
    # Enough of serde_json's compact, key-sorted output for these inputs:
    # ASCII strings without escapes, integers.
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def commit_identity(wb, content, manifest_digest):
    return sha(b"nokv.workbench.commit_identity.v1\0" + len64(wb.encode())
               + len64(content.encode()) + len64(manifest_digest.encode()))


def projection_input(wb, path, content, canon, manifest_digest, identity):
    return sha(b"nokv.workbench.run_manifest.projection_input.v1\0"
               + len64(wb.encode()) + len64(path.encode()) + len64(content.encode())
               + len64(canon) + len64(manifest_digest.encode()) + identity)


def envelope(wb, path, content, manifest, manifest_digest, identity, committed_at):
    return canonical({
        "commit_identity": identity.hex(),
        "committed_at_unix_seconds": committed_at,
        "content_digest_uri": content,
        "manifest": manifest,
        "manifest_digest_uri": manifest_digest,
        "schema": "nokv.workbench.run_manifest.v1",
        "workbench_id": wb,
        "workbench_path": path,
    })


def init_v5(pid, inc, read_version, head, content, manifest_digest, tree_rev, replace,
            run_gen, committed_at, parents):
    b = b"nokv.build-commit.initialization.v5\0" + pid + inc + u64(read_version)
    b += u8(0) if head is None else u8(1) + head[0] + u64(head[1])
    b += len64(content.encode()) + len64(manifest_digest.encode()) + tree_rev
    b += u8(1 if replace else 0)
    b += u8(0) if run_gen is None else u8(1) + u64(run_gen)
    b += u64(committed_at) + u8(0) + u8(0)
    b += u32(len(parents)) + b"".join(parents)
    return sha(b)


def path_key(comps):
    # The exact-row order of PathCurrent and CommitMember keys.
    return b"\0".join(bytes(c + 1 for c in comp.encode()) for comp in comps) + b"\x01"


def opt(s):
    return u8(0) if s is None else u8(1) + u32(len(s.encode())) + s.encode()


def b32(s):
    return u32(len(s)) + s


def member_digest(members):
    members = sorted(members, key=lambda m: path_key(m["path"]))
    body = b""
    for m in members:
        body += b32("/".join(m["path"]).encode())
        body += bytes.fromhex(m["revision"]) + u64(m["generation"]) + u64(m["size"])
        body += b32(m["body_digest_uri"].encode()) + b32(m["manifest_digest_uri"].encode())
        body += u32(m["dependency_count"]) + u32(m["dependency_depth"])
        body += b32(m["content_type"].encode())
        body += opt(m["producer"]) + opt(m["manifest_id"])
        body += b32(u16(0))  # an empty index projection: u16 count 0
    return sha(b"cairn.workbench.commit_members.v1\0" + u64(len(members)) + body), members


def u16(n):
    return struct.pack(">H", n)


def restore_vectors(out):
    """The restore's identities and digests (docs/workbench.md, "Restore")."""
    root = bytes([0x11]) * 16
    src_inc = bytes([0x22]) * 16
    logical = "/agents/test/wb"

    def source_identity(kind, sel):
        return u64(sel) if kind == 1 else sel

    def dst_incarnation(src, kind, sel, dst):
        return sha(b"cairn.workbench.restore.incarnation.v1\0" + root + b32(src.encode()) + src_inc
                   + u8(kind) + source_identity(kind, sel) + b32(dst.encode()))[:16]

    def identity(src, kind, sel, dst, dst_inc):
        return sha(b"nokv.restore.operation.v2\0" + root + b32(src.encode()) + src_inc + u8(kind)
                   + source_identity(kind, sel) + b32(dst.encode()) + dst_inc)

    def manifest(src, dst, op, kind, sel):
        source = ({"kind": "snapshot", "snapshot_id": sel} if kind == 1
                  else {"kind": "commit", "commit_id": sel.hex()})
        return canonical({
            "destination_path": logical + "/" + dst, "destination_workbench_id": dst,
            "operation_id": op.hex(),
            "restored_from": {"path": logical + "/" + src, "source": source, "workbench_id": src},
            "schema": "nokv.workbench.restore_manifest.v2",
            "source_path": logical + "/" + src, "source_workbench_id": src,
        })

    def inline_row(owner, body):
        # ArtifactManifest value v2: an inline row.
        return (u8(2) + owner + u64(0) + b32(b"") + u64(0) + u64(0) + u64(len(body))
                + b32(uri(sha(body)).encode()) + u8(0) + u8(1) + b32(body))

    def path_entry(rev, body, rows_digest):
        # PathCurrent value v2 with created and modified versions zero and
        # an empty index projection (u16 count 0).
        return (u8(2) + u64(1) + rev + u64(len(body)) + b32(uri(sha(body)).encode())
                + b32(rows_digest.encode()) + u32(0) + u32(0) + b32(b"application/json")
                + u8(0) + u8(0) + u64(0) + u64(0) + u16(0))

    for name, kind, sel in (("restore_snapshot", 1, 7), ("restore_commit", 2, bytes([0x55]) * 32)):
        src, dst = "wb-main", "wb-restored"
        dst_inc = dst_incarnation(src, kind, sel, dst)
        ident = identity(src, kind, sel, dst, dst_inc)
        op = ident[:16]
        body = manifest(src, dst, op, kind, sel)
        rev = sha(b"cairn.workbench.restore.manifest_revision.v1\0" + op)[:16]
        row = inline_row(rev, body)
        rows_digest = uri(sha(b"cairn.workbench.artifact_manifest.v1\0" + u64(len(row)) + row))
        entry = path_entry(rev, body, rows_digest)
        init = sha(b"nokv.restore.initialization.v3\0" + ident + u32(1) + u8(1)
                   + b32(b"metadata/restore_manifest.json") + b32(entry))
        out[name] = {
            "root": root.hex(), "logical_root": logical, "source_workbench_id": src,
            "source_incarnation": src_inc.hex(), "source_kind": kind,
            "snapshot_id": sel if kind == 1 else None,
            "commit_id": sel.hex() if kind == 2 else None,
            "destination_workbench_id": dst,
            "destination_incarnation": dst_inc.hex(), "identity_digest": ident.hex(),
            "operation_id": op.hex(), "restore_manifest": body.decode(),
            "manifest_revision": rev.hex(), "encoded_path_entry": entry.hex(),
            "initialization_digest": init.hex(),
        }

    member_digest = bytes([0x44]) * 32
    out["restored_content_digest"] = {
        "member_digest": member_digest.hex(),
        "content_digest_uri": uri(sha(b"nokv.workbench.restored_content_digest.v1\0" + member_digest)),
    }
    rows = [bytes([0x66]) * 32, bytes([0x77]) * 32]
    chain = bytes(32)
    for i, r in enumerate(rows):
        chain = sha(b"cairn.workbench.restore.members.v1\0" + chain + u64(i) + r)
    out["restore_member_chain"] = {"rows": [r.hex() for r in rows], "chain": chain.hex()}


def main():
    out = {}
    content = "sha256:" + "01" * 32

    # The transcript's wb-main commit: its identity from its own digests.
    md = "sha256:e21a213898ee65fadcdea40f435729c5c79afe44f7483ab4d5d3baac2a26de28"
    out["transcript_commit_identity"] = {
        "workbench_id": "wb-main", "content_digest_uri": content, "manifest_digest_uri": md,
        "commit_identity": commit_identity("wb-main", content, md).hex(),
    }

    # The transcript's find match: the whole envelope from its manifest.
    manifest = {"task": "ptycho", "model": "viking"}
    canon = canonical(manifest)
    md = uri(sha(canon))
    ident = commit_identity("wb-main", content, md)
    path = "/agents/test/wb/wb-main"
    env = envelope("wb-main", path, content, manifest, md, ident, 1700000000)
    out["transcript_find_envelope"] = {
        "workbench_id": "wb-main", "workbench_path": path, "content_digest_uri": content,
        "manifest": manifest, "committed_at_unix_seconds": 1700000000,
        "canonical_manifest": canon.decode(), "manifest_digest_uri": md,
        "commit_identity": ident.hex(), "envelope": env.decode(),
        "envelope_digest_uri": uri(sha(env)), "size_bytes": len(env),
    }

    pid = projection_input("wb-main", path, content, canon, md, ident)
    out["projection_input_digest"] = {
        "workbench_id": "wb-main", "workbench_path": path, "content_digest_uri": content,
        "canonical_manifest": canon.decode(), "manifest_digest_uri": md,
        "commit_identity": ident.hex(), "digest": pid.hex(),
    }

    inc = bytes([0x22]) * 16
    head_commit = bytes([0x55]) * 32
    tree_rev = bytes([0x33]) * 16
    out["build_commit_initialization_v5"] = {
        "projection_input_digest": pid.hex(), "incarnation": inc.hex(), "read_version": 7,
        "head_commit": head_commit.hex(), "head_generation": 2,
        "content_digest_uri": content, "manifest_digest_uri": md,
        "tree_revision": tree_rev.hex(), "replace": True, "run_manifest_generation": 2,
        "committed_at_unix_seconds": 1700000000, "parents": [head_commit.hex()],
        "digest": init_v5(pid, inc, 7, (head_commit, 2), content, md, tree_rev, True, 2,
                          1700000000, [head_commit]).hex(),
        "digest_first_commit": init_v5(pid, inc, 7, None, content, md, tree_rev, False, None,
                                       1700000000, []).hex(),
    }

    members = [
        {"path": ["outputs", "a-b.txt"], "revision": "66" * 16, "generation": 1, "size": 3,
         "body_digest_uri": "sha256:" + "ab" * 32, "manifest_digest_uri": "sha256:" + "cd" * 32,
         "dependency_count": 0, "dependency_depth": 0, "content_type": "text/plain; charset=utf-8",
         "producer": None, "manifest_id": None},
        {"path": ["outputs", "a", "x.txt"], "revision": "77" * 16, "generation": 4, "size": 1000,
         "body_digest_uri": "sha256:" + "ef" * 32, "manifest_digest_uri": "sha256:" + "cd" * 32,
         "dependency_count": 2, "dependency_depth": 1, "content_type": "application/octet-stream",
         "producer": "p", "manifest_id": None},
    ]
    md_members, ordered = member_digest(members)
    out["commit_member_digest"] = {
        "members": members, "order": ["/".join(m["path"]) for m in ordered],
        "digest": md_members.hex(), "tree_digest_uri": uri(md_members),
    }

    revs = sorted([bytes([0x77]) * 16, bytes([0x66]) * 16])
    out["commit_revision_digest"] = {
        "revisions": [r.hex() for r in revs],
        "digest": sha(b"cairn.workbench.commit_revisions.v1\0" + u64(len(revs)) + b"".join(revs)).hex(),
    }
    out["commit_parent_digest"] = {
        "parents": [head_commit.hex()],
        "digest": sha(b"cairn.workbench.commit_parents.v1\0" + u64(1) + head_commit).hex(),
        "digest_none": sha(b"cairn.workbench.commit_parents.v1\0" + u64(0)).hex(),
    }
    root = bytes([0x11]) * 16
    out["build_commit_operation_id"] = {
        "root": root.hex(), "commit": ident.hex(),
        "operation_id": sha(b"cairn.workbench.build_commit.operation.v1\0" + root + ident)[:16].hex(),
    }
    restore_vectors(out)
    print(json.dumps(out, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
