package nokv

// PublishResult is a Publish operation's deterministic result: the path
// generation and workspace revision it produced and the commit version that
// published it.
type PublishResult struct {
	Generation        uint64
	WorkspaceRevision uint64
	CommitVersion     uint64
}

// OperationFailure is an operation's terminal error: a stable Workbench
// error code and its message.
type OperationFailure struct {
	Code    string
	Message string
}

// PublishOperation is the value of an Operation row of kind Publish
// (version 1):
//
//	phase u8 | input_digest [32] | workbench_id str | incarnation [16] | path |
//	revision [16] | expected_generation? u64 | object_count u64 |
//	cleanup_cursor u64 | result? (generation u64 | workspace_revision u64 |
//	commit_version u64) | failure? (code str | message str)
//
// ExpectedGeneration is absent for a create-only publication and holds the
// generation a replace or append must find. ObjectCount is the size of the
// StagedObject ledger; CleanupCursor is the next ledger sequence cleanup
// handles. At most one of Result and Failure is present.
type PublishOperation struct {
	Phase              PublishPhase
	InputDigest        [32]byte
	WorkbenchID        string
	Incarnation        IncarnationID
	Path               []string
	Revision           RevisionID
	ExpectedGeneration *uint64
	ObjectCount        uint64
	CleanupCursor      uint64
	Result             *PublishResult
	Failure            *OperationFailure
}

const recPublishOperation = "operation value (publish)"

// Encode returns the value's bytes.
func (v PublishOperation) Encode() ([]byte, error) {
	w := newValueWriter(recPublishOperation, PublishOperationVersion)
	w.check(workbenchIDReason(v.WorkbenchID))
	if v.Result != nil && v.Failure != nil {
		w.fail("both a result and a failure", nil)
	}
	w.enum("phase", &publishPhaseDef, uint8(v.Phase))
	w.id32(v.InputDigest)
	w.str("workbench id", v.WorkbenchID)
	w.id16(v.Incarnation)
	w.path("path", v.Path)
	w.id16(v.Revision)
	w.present(v.ExpectedGeneration != nil)
	if v.ExpectedGeneration != nil {
		w.u64(*v.ExpectedGeneration)
	}
	w.u64(v.ObjectCount)
	w.u64(v.CleanupCursor)
	w.present(v.Result != nil)
	if res := v.Result; res != nil {
		w.u64(res.Generation)
		w.u64(res.WorkspaceRevision)
		w.u64(res.CommitVersion)
	}
	w.present(v.Failure != nil)
	if f := v.Failure; f != nil {
		w.str("failure code", f.Code)
		w.str("failure message", f.Message)
	}
	return w.finish()
}

// DecodePublishOperation decodes the value of an Operation row of kind
// Publish.
func DecodePublishOperation(b []byte) (PublishOperation, error) {
	r := newValueReader(recPublishOperation, b, PublishOperationVersion)
	var v PublishOperation
	v.Phase = PublishPhase(r.enum("phase", &publishPhaseDef))
	v.InputDigest = r.id32()
	off := r.offset()
	v.WorkbenchID = r.str("workbench id")
	if r.err == nil {
		r.check(off, workbenchIDReason(v.WorkbenchID))
	}
	v.Incarnation = r.id16()
	v.Path = r.path("path")
	v.Revision = r.id16()
	if r.present() {
		g := r.u64()
		v.ExpectedGeneration = &g
	}
	v.ObjectCount = r.u64()
	v.CleanupCursor = r.u64()
	if r.present() {
		v.Result = &PublishResult{Generation: r.u64(), WorkspaceRevision: r.u64(), CommitVersion: r.u64()}
	}
	off = r.offset()
	if r.present() {
		v.Failure = &OperationFailure{Code: r.str("failure code"), Message: r.str("failure message")}
		if r.err == nil && v.Result != nil {
			r.failAt(off, "both a result and a failure", nil)
		}
	}
	if err := r.end(); err != nil {
		return PublishOperation{}, err
	}
	return v, nil
}

// StagedObject is the value of a StagedObject row, one entry of a
// publication's staging ledger (version 1):
//
//	revision [16] | object_key str | upload_id? str | expected_length u64 |
//	expected_digest_uri str | provider_state u8 | cleanup_state u8
//
// UploadID is the multipart upload id, when the object is uploaded in parts.
type StagedObject struct {
	Revision          RevisionID
	ObjectKey         string
	UploadID          *string
	ExpectedLength    uint64
	ExpectedDigestURI string
	Provider          StagedProviderState
	Cleanup           StagedCleanupState
}

const recStagedObject = "staged_object value"

// Encode returns the value's bytes.
func (v StagedObject) Encode() ([]byte, error) {
	w := newValueWriter(recStagedObject, StagedObjectVersion)
	w.check(firstReason(objectKeyReason(v.ObjectKey), digestURIReason("expected digest uri", v.ExpectedDigestURI)))
	w.id16(v.Revision)
	w.str("object key", v.ObjectKey)
	w.optStr("upload id", v.UploadID)
	w.u64(v.ExpectedLength)
	w.str("expected digest uri", v.ExpectedDigestURI)
	w.enum("provider state", &stagedProviderStateDef, uint8(v.Provider))
	w.enum("cleanup state", &stagedCleanupStateDef, uint8(v.Cleanup))
	return w.finish()
}

// DecodeStagedObject decodes a StagedObject value.
func DecodeStagedObject(b []byte) (StagedObject, error) {
	r := newValueReader(recStagedObject, b, StagedObjectVersion)
	var v StagedObject
	v.Revision = r.id16()
	off := r.offset()
	v.ObjectKey = r.str("object key")
	if r.err == nil {
		r.check(off, objectKeyReason(v.ObjectKey))
	}
	v.UploadID = r.optStr("upload id")
	v.ExpectedLength = r.u64()
	off = r.offset()
	v.ExpectedDigestURI = r.str("expected digest uri")
	if r.err == nil {
		r.check(off, digestURIReason("expected digest uri", v.ExpectedDigestURI))
	}
	v.Provider = StagedProviderState(r.enum("provider state", &stagedProviderStateDef))
	v.Cleanup = StagedCleanupState(r.enum("cleanup state", &stagedCleanupStateDef))
	if err := r.end(); err != nil {
		return StagedObject{}, err
	}
	return v, nil
}
