package bodies

import (
	"encoding/hex"
	"fmt"

	"github.com/cairnstore/cairn/manifests"
)

// StagingLedgerSchema is the schema of a staging ledger document.
const StagingLedgerSchema = "cairn.staging_ledger.v1"

// StagingLedger is a staging's ledger: the durable list of every object
// the staging may upload, written create-only before the first of them
// under StagingKey(operation id). It is canonical JSON (package
// manifests); its bytes are part of the stored format.
type StagingLedger struct {
	SchemaName  string         `json:"schema"`
	Operation   string         `json:"operation_id"` // 32 lowercase hex
	Revision    string         `json:"revision_id"`  // 32 lowercase hex
	Root        string         `json:"root_id"`      // 32 lowercase hex
	WorkbenchID string         `json:"workbench_id"`
	Path        string         `json:"path"` // section-joined logical path
	Tool        string         `json:"tool"`
	Objects     []LedgerObject `json:"objects"`
}

// LedgerObject is one object a staging ledger names: a Block's key, size
// and digest.
type LedgerObject struct {
	Key    string `json:"key"`
	Length uint64 `json:"length"`
	Digest string `json:"digest_uri"`
}

// Schema returns StagingLedgerSchema.
func (StagingLedger) Schema() string { return StagingLedgerSchema }

// DecodeStagingLedger decodes a staging ledger's canonical bytes strictly.
func DecodeStagingLedger(b []byte) (StagingLedger, error) {
	var l StagingLedger
	if err := manifests.Decode(b, &l); err != nil {
		return StagingLedger{}, fmt.Errorf("bodies: decode staging ledger: %w", err)
	}
	return l, nil
}

// Ledger returns st's ledger document.
func (st *Staging) Ledger() StagingLedger {
	l := StagingLedger{
		SchemaName:  StagingLedgerSchema,
		Operation:   hex.EncodeToString(st.Operation[:]),
		Revision:    hex.EncodeToString(st.Revision[:]),
		Root:        hex.EncodeToString(st.Root[:]),
		WorkbenchID: st.Origin.WorkbenchID,
		Path:        st.Origin.Path,
		Tool:        st.Origin.Tool,
		Objects:     make([]LedgerObject, len(st.Blocks)),
	}
	for i, b := range st.Blocks {
		l.Objects[i] = LedgerObject{Key: b.Key, Length: b.Size, Digest: b.Digest.URI()}
	}
	return l
}
