package workbench

import (
	"encoding/hex"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/history"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The restore's identities and digests against the vectors that
// testdata/history_vectors.py computes independently.
func TestRestoreVectors(t *testing.T) {
	vs := loadHistoryVectors(t)
	for _, name := range []string{"restore_snapshot", "restore_commit"} {
		v := vs[name]
		root := nokv.RootID(hex16(t, v["root"]))
		srcID, dstID := v["source_workbench_id"].(string), v["destination_workbench_id"].(string)
		srcInc := nokv.IncarnationID(hex16(t, v["source_incarnation"]))
		src := history.RestoreSource{Kind: nokv.RestoreSourceKindSnapshot}
		if v["source_kind"].(float64) == 2 {
			src = history.RestoreSource{Kind: nokv.RestoreSourceKindCommit, Commit: hex32(t, v["commit_id"])}
		} else {
			src.Snapshot = nokv.SnapshotID(v["snapshot_id"].(float64))
		}
		dstInc := history.RestoreIncarnation(root, srcID, srcInc, src, dstID)
		if dstInc.String() != v["destination_incarnation"] {
			t.Fatalf("%s: destination incarnation %s, want %v", name, dstInc, v["destination_incarnation"])
		}
		identity := history.RestoreIdentityDigest(root, srcID, srcInc, src, dstID, dstInc)
		if hex.EncodeToString(identity[:]) != v["identity_digest"] || history.RestoreOperationID(identity).String() != v["operation_id"] {
			t.Fatalf("%s: identity %x, want %v", name, identity, v["identity_digest"])
		}
		s := &Service{core.Detached(root, v["logical_root"].(string))}
		p := &history.RestorePlan{SrcID: srcID, DstID: dstID, SrcInc: srcInc, DstInc: dstInc, Src: src,
			Identity: identity, OpID: history.RestoreOperationID(identity)}
		if werr := history.PlanRestoreManifest(s.Service, p); werr != nil {
			t.Fatal(werr)
		}
		enc, err := p.RmEntry.Encode()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case string(p.RmBody) != v["restore_manifest"]:
			t.Fatalf("%s: restore manifest\n%s\nwant\n%v", name, p.RmBody, v["restore_manifest"])
		case p.RmEntry.Revision.String() != v["manifest_revision"]:
			t.Fatalf("%s: manifest revision %s", name, p.RmEntry.Revision)
		case hex.EncodeToString(enc) != v["encoded_path_entry"]:
			t.Fatalf("%s: encoded entry %x\nwant %v", name, enc, v["encoded_path_entry"])
		case hex.EncodeToString(p.Init[:]) != v["initialization_digest"]:
			t.Fatalf("%s: initialization digest %x, want %v", name, p.Init, v["initialization_digest"])
		}
		// The manifest reads back as the same provenance.
		prov, err := history.ParseRestoreManifest(p.RmBody)
		if err != nil || prov.Src != src || prov.SrcID != srcID || prov.DstID != dstID || prov.OperationID != p.OpID.String() {
			t.Fatalf("%s: parsed %+v, %v", name, prov, err)
		}
	}
	v := vs["restored_content_digest"]
	if got := history.RestoredContentDigestURI(hex32(t, v["member_digest"])); got != v["content_digest_uri"] {
		t.Fatalf("restored content digest %s, want %v", got, v["content_digest_uri"])
	}
	v = vs["restore_member_chain"]
	var chain [32]byte
	for i, r := range v["rows"].([]any) {
		chain = history.MemberChain(chain, uint64(i), hex32(t, r))
	}
	if hex.EncodeToString(chain[:]) != v["chain"] {
		t.Fatalf("member chain %x, want %v", chain, v["chain"])
	}
}

// TestParseRestoreManifest: v2 with exactly its 7 keys and v1 with its 8
// are read; anything else is refused.
func TestParseRestoreManifest(t *testing.T) {
	v1 := `{"destination_path":"/agents/a/wb/d","destination_workbench_id":"d","operation_id":"00","restored_from":{"path":"/agents/a/wb/s","snapshot_id":9,"workbench_id":"s"},"schema":"nokv.workbench.restore_manifest.v1","snapshot_id":9,"source_path":"/agents/a/wb/s","source_workbench_id":"s"}`
	p, err := history.ParseRestoreManifest([]byte(v1))
	if err != nil || p.Src != (history.RestoreSource{Kind: nokv.RestoreSourceKindSnapshot, Snapshot: 9}) || p.SrcID != "s" || p.DstID != "d" {
		t.Fatalf("v1: %+v, %v", p, err)
	}
	for _, bad := range []string{
		`[]`,
		`{"schema":"nokv.workbench.restore_manifest.v3"}`,
		// v2 with an eighth key
		`{"destination_path":"x","destination_workbench_id":"d","operation_id":"00","restored_from":{"path":"x","source":{"kind":"snapshot","snapshot_id":1},"workbench_id":"s"},"schema":"nokv.workbench.restore_manifest.v2","snapshot_id":1,"source_path":"x","source_workbench_id":"s"}`,
		// v2 with a zero snapshot id, or a short commit id
		`{"destination_path":"x","destination_workbench_id":"d","operation_id":"00","restored_from":{"path":"x","source":{"kind":"snapshot","snapshot_id":0},"workbench_id":"s"},"schema":"nokv.workbench.restore_manifest.v2","source_path":"x","source_workbench_id":"s"}`,
		`{"destination_path":"x","destination_workbench_id":"d","operation_id":"00","restored_from":{"path":"x","source":{"kind":"commit","commit_id":"ab"},"workbench_id":"s"},"schema":"nokv.workbench.restore_manifest.v2","source_path":"x","source_workbench_id":"s"}`,
	} {
		if _, err := history.ParseRestoreManifest([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
