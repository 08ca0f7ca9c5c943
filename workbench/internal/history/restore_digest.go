package history

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The identities and digests of a restore (docs/workbench.md, "Restore").
// The operation identity and initialization digests are the seed's; the
// restore manifest and the restored content digest are the reference
// facade's; the destination incarnation, the restore manifest's revision
// id and the member chain are cairn's. testdata/history_vectors.py
// computes the same values independently.

// Domain separators.
const (
	restoreIdentityTag       = "nokv.restore.operation.v2\x00"
	restoreInitializationTag = "nokv.restore.initialization.v3\x00"
	restoredContentTag       = "nokv.workbench.restored_content_digest.v1\x00"
	restoreIncarnationTag    = "cairn.workbench.restore.incarnation.v1\x00"
	restoreManifestRevTag    = "cairn.workbench.restore.manifest_revision.v1\x00"
	restoreMemberChainTag    = "cairn.workbench.restore.members.v1\x00"
	restoreRowTag            = "cairn.workbench.restore.row.v1\x00"
)

// RestoreManifestSchema is the schema of the restore manifest the tool
// writes; restoreManifestSchemaV1 is the earlier one, still read.
const (
	RestoreManifestSchema   = "nokv.workbench.restore_manifest.v2"
	restoreManifestSchemaV1 = "nokv.workbench.restore_manifest.v1"
)

// restoreManifestComps is metadata/restore_manifest.json as a stored path.
var restoreManifestComps = []string{"metadata", "restore_manifest.json"}

// RestoreSource is a restore's concrete source: a snapshot id or a commit
// id, never an alias.
type RestoreSource struct {
	Kind     nokv.RestoreSourceKind
	Snapshot nokv.SnapshotID
	Commit   nokv.CommitID
}

// identityBytes is the source_identity of the seed's formula: u64be
// snapshot id, or the 32-byte commit id.
func (src RestoreSource) identityBytes() []byte {
	if src.Kind == nokv.RestoreSourceKindSnapshot {
		return wire.NewWriter(nil).U64(uint64(src.Snapshot)).Bytes()
	}
	return bytes.Clone(src.Commit[:])
}

// RestoreIncarnation derives the destination's incarnation from
// everything that names the restore except the destination incarnation
// itself: SHA-256 of "cairn.workbench.restore.incarnation.v1\0", the root,
// u32be-length-prefixed source id, the source incarnation, u8 source
// kind, the source identity and the u32be-length-prefixed destination id;
// the first 16 bytes. A retry derives the same incarnation, and so the
// same operation id.
func RestoreIncarnation(root nokv.RootID, srcID string, srcInc nokv.IncarnationID, src RestoreSource, dstID string) nokv.IncarnationID {
	h := sha256.New()
	h.Write([]byte(restoreIncarnationTag))
	h.Write(root[:])
	h.Write(wire.NewWriter(nil).Bytes32([]byte(srcID)).Bytes())
	h.Write(srcInc[:])
	h.Write([]byte{uint8(src.Kind)})
	h.Write(src.identityBytes())
	h.Write(wire.NewWriter(nil).Bytes32([]byte(dstID)).Bytes())
	var inc nokv.IncarnationID
	copy(inc[:], h.Sum(nil))
	return inc
}

// RestoreIdentityDigest is the seed's identity_digest
// (nokv.restore.operation.v2); the operation id is its first 16 bytes.
func RestoreIdentityDigest(root nokv.RootID, srcID string, srcInc nokv.IncarnationID, src RestoreSource, dstID string, dstInc nokv.IncarnationID) [32]byte {
	h := sha256.New()
	h.Write([]byte(restoreIdentityTag))
	h.Write(root[:])
	h.Write(wire.NewWriter(nil).Bytes32([]byte(srcID)).Bytes())
	h.Write(srcInc[:])
	h.Write([]byte{uint8(src.Kind)})
	h.Write(src.identityBytes())
	h.Write(wire.NewWriter(nil).Bytes32([]byte(dstID)).Bytes())
	h.Write(dstInc[:])
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// RestoreOperationID is the first 16 bytes of the identity digest.
func RestoreOperationID(identity [32]byte) nokv.OperationID {
	var id nokv.OperationID
	copy(id[:], identity[:16])
	return id
}

// RestoreInitializationDigest is the seed's initialization_digest
// (nokv.restore.initialization.v3) over the one reserved projection, the
// put of metadata/restore_manifest.json with its encoded path entry.
func RestoreInitializationDigest(identity [32]byte, encodedEntry []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(restoreInitializationTag))
	h.Write(identity[:])
	w := wire.NewWriter(nil).U32(1).U8(1)
	w.Bytes32([]byte("metadata/restore_manifest.json"))
	w.Bytes32(encodedEntry)
	h.Write(w.Bytes())
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// restoreManifestRevision is the revision id of a restore's manifest: the
// first 16 bytes of SHA-256 of "cairn.workbench.restore.manifest_revision.v1\0"
// and the operation id, so that the descriptor the initialization digest
// seals is known before anything is written.
func restoreManifestRevision(op nokv.OperationID) nokv.RevisionID {
	h := sha256.Sum256(append([]byte(restoreManifestRevTag), op[:]...))
	var rev nokv.RevisionID
	copy(rev[:], h[:16])
	return rev
}

// RestoredContentDigestURI is the destination's content digest when the
// snapshot's tree is not its base commit's: "sha256:" and the hex of
// SHA-256("nokv.workbench.restored_content_digest.v1\0" ‖ member digest).
func RestoredContentDigestURI(memberDigest [32]byte) string {
	h := sha256.Sum256(append([]byte(restoredContentTag), memberDigest[:]...))
	return "sha256:" + hex.EncodeToString(h[:])
}

// restoreManifestBody is the canonical 7-key restore manifest v2.
func restoreManifestBody(logical, srcID, dstID string, op nokv.OperationID, src RestoreSource) ([]byte, error) {
	srcPath := core.WorkbenchPath(logical, srcID)
	return core.MarshalResult(map[string]any{
		"destination_path":         core.WorkbenchPath(logical, dstID),
		"destination_workbench_id": dstID,
		"operation_id":             op.String(),
		"restored_from": map[string]any{
			"path":         srcPath,
			"source":       restoreSourceJSON(src),
			"workbench_id": srcID,
		},
		"schema":              RestoreManifestSchema,
		"source_path":         srcPath,
		"source_workbench_id": srcID,
	})
}

func restoreSourceJSON(src RestoreSource) map[string]any {
	if src.Kind == nokv.RestoreSourceKindSnapshot {
		return map[string]any{"kind": "snapshot", "snapshot_id": uint64(src.Snapshot)}
	}
	return map[string]any{"kind": "commit", "commit_id": src.Commit.String()}
}

// restoreProvenance is what a stored restore manifest (v2, or v1) says
// about where its workbench came from.
type restoreProvenance struct {
	OperationID string
	SrcID       string
	DstID       string
	Src         RestoreSource
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseRestoreManifest reads a restore manifest of either version. v2 has
// exactly 7 keys; v1 has 8: the same and a top-level snapshot_id, and
// restored_from carries snapshot_id instead of source (a v1 restore was
// always from a snapshot).
func ParseRestoreManifest(b []byte) (restoreProvenance, error) {
	var m map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return restoreProvenance{}, fmt.Errorf("restore manifest is not a JSON object: %w", err)
	}
	var p restoreProvenance
	var schema string
	str := func(key string, dst *string) error {
		raw, ok := m[key]
		if !ok || json.Unmarshal(raw, dst) != nil {
			return fmt.Errorf("restore manifest has no string %s", key)
		}
		return nil
	}
	for key, dst := range map[string]*string{"schema": &schema, "operation_id": &p.OperationID,
		"source_workbench_id": &p.SrcID, "destination_workbench_id": &p.DstID} {
		if err := str(key, dst); err != nil {
			return restoreProvenance{}, err
		}
	}
	var from struct {
		Source *struct {
			Kind       string       `json:"kind"`
			SnapshotID *json.Number `json:"snapshot_id"`
			CommitID   string       `json:"commit_id"`
		} `json:"source"`
		SnapshotID *json.Number `json:"snapshot_id"`
	}
	fd := json.NewDecoder(bytes.NewReader(m["restored_from"]))
	fd.UseNumber()
	if err := fd.Decode(&from); err != nil {
		return restoreProvenance{}, fmt.Errorf("restore manifest restored_from: %w", err)
	}
	snapshot := func(n *json.Number) error {
		if n == nil {
			return fmt.Errorf("restore manifest names no snapshot id")
		}
		id, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil || id == 0 {
			return fmt.Errorf("restore manifest snapshot id %s", n)
		}
		p.Src = RestoreSource{Kind: nokv.RestoreSourceKindSnapshot, Snapshot: nokv.SnapshotID(id)}
		return nil
	}
	switch schema {
	case RestoreManifestSchema:
		if len(m) != 7 || from.Source == nil {
			return restoreProvenance{}, fmt.Errorf("restore manifest v2 has %d keys", len(m))
		}
		switch from.Source.Kind {
		case "snapshot":
			if err := snapshot(from.Source.SnapshotID); err != nil {
				return restoreProvenance{}, err
			}
		case "commit":
			if !hex64.MatchString(from.Source.CommitID) {
				return restoreProvenance{}, fmt.Errorf("restore manifest commit id %q", from.Source.CommitID)
			}
			p.Src.Kind = nokv.RestoreSourceKindCommit
			c, _ := hex.DecodeString(from.Source.CommitID)
			copy(p.Src.Commit[:], c)
		default:
			return restoreProvenance{}, fmt.Errorf("restore manifest source kind %q", from.Source.Kind)
		}
	case restoreManifestSchemaV1:
		if len(m) != 8 {
			return restoreProvenance{}, fmt.Errorf("restore manifest v1 has %d keys", len(m))
		}
		if err := snapshot(from.SnapshotID); err != nil {
			return restoreProvenance{}, err
		}
	default:
		return restoreProvenance{}, fmt.Errorf("restore manifest schema %q", schema)
	}
	return p, nil
}

// MemberChain extends a restore's member chain by one row:
// SHA-256("cairn.workbench.restore.members.v1\0" ‖ previous ‖ u64be
// sequence ‖ row digest). The chain of no member is 32 zero bytes.
func MemberChain(prev [32]byte, seq uint64, row [32]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(restoreMemberChainTag))
	h.Write(prev[:])
	h.Write(wire.NewWriter(nil).U64(seq).Bytes())
	h.Write(row[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// rowDigest binds a destination row: SHA-256 of
// "cairn.workbench.restore.row.v1\0", the u32be-length-prefixed path
// ("/"-joined) and the encoded PathEntry descriptor (its created and
// modified versions zero, as they are only known when a batch lands).
func rowDigest(path []string, e nokv.PathEntry) ([32]byte, error) {
	e.CreatedVersion, e.ModifiedVersion = 0, 0
	enc, err := e.Encode()
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	h.Write([]byte(restoreRowTag))
	h.Write(wire.NewWriter(nil).Bytes32([]byte(core.LogicalPath(path))).Bytes())
	h.Write(enc)
	var out [32]byte
	h.Sum(out[:0])
	return out, nil
}
