package files

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// workbench_put_file publishes a whole body. replace=false (the default) is
// create-only: an artifact or a directory at the path is AlreadyExists.
// replace=true is replace-only: a missing path is NotFound, a directory
// NotArtifact, and the write replaces the generation it observed (a
// concurrent replace makes it a retryable Conflict). It is never an
// upsert. A missing workbench is created by the same command.
func init() { core.RegisterTool("workbench_put_file", putFileTool) }

// putFileInput is workbench_put_file's input.
type putFileInput struct {
	core.TargetInput
	core.PayloadInput
	Replace bool `json:"replace"`
}

func (in *putFileInput) Resolve(s *core.Service) *core.Error {
	if werr := in.TargetInput.Resolve(); werr != nil {
		return werr
	}
	return in.PayloadInput.Resolve(s.Opts.MaxBytes)
}

// PutFileInput is workbench_put_file's input. Exactly one of Text and
// Base64 is set. Its strings must be valid UTF-8, as JSON's are (a body
// that is not goes as Base64): PutFile refuses others with
// InvalidArguments.
type PutFileInput struct {
	ID      string `json:"id"`
	Section string `json:"section"`
	Path    string `json:"path"` // relative to Section
	// Text is the body as UTF-8 text (content type TextContentType unless
	// ContentType is set).
	Text *string `json:"text,omitempty"`
	// Base64 is the body in standard base64 with padding (content type
	// BinaryContentType unless ContentType is set).
	Base64      *string `json:"base64,omitempty"`
	ContentType *string `json:"content_type,omitempty"`
	// Replace makes the put replace-only: the path must hold an artifact.
	// Without it the put is create-only.
	Replace bool `json:"replace,omitempty"`
}

// PutFileResult is workbench_put_file's result.
type PutFileResult struct {
	core.Success
	core.FileLocation
	SizeBytes   uint64 `json:"size_bytes"`
	DigestURI   string `json:"digest_uri"` // the body's SHA-256
	Generation  uint64 `json:"generation"` // the path's generation after the put
	ContentType string `json:"content_type"`
	Replace     bool   `json:"replace"` // whether the put was replace-only
}

func putFileTool(ctx context.Context, s *core.Service, in *putFileInput) (*PutFileResult, *core.Error) {
	return PutFile(ctx, s, in.WorkbenchID, in.StoredPath, in.Body, in.ResolvedContentType, in.Replace)
}

// PutFile publishes body at path of workbench id.
func PutFile(ctx context.Context, s *core.Service, id string, path []string, body []byte, ct string, replace bool) (*PutFileResult, *core.Error) {
	obs, werr := s.Observe(ctx, id, path)
	if werr != nil {
		return nil, werr
	}
	mode := publish.PubCreate
	if replace {
		// Replace-only: refuse before uploading anything.
		mode = publish.PubReplace
		if obs.Entry == nil {
			dir, werr := obs.IsDirectory(ctx, s, id, path)
			if werr != nil {
				return nil, werr
			}
			if dir {
				return nil, core.NotArtifact(core.LogicalPath(path))
			}
			return nil, core.NotFound(core.LogicalPath(path))
		}
	} else if obs.Entry != nil {
		return nil, core.AlreadyExists(fmt.Sprintf("%s already exists", core.LogicalPath(path)))
	} else if dir, werr := obs.IsDirectory(ctx, s, id, path); werr != nil {
		return nil, werr
	} else if dir {
		return nil, core.AlreadyExists(fmt.Sprintf("%s already exists as a directory", core.LogicalPath(path)))
	}

	st := publish.PlanStaging(s, "workbench_put_file", id, path, body)
	if werr := publish.StageBytes(ctx, s, st, body); werr != nil {
		return nil, werr
	}
	h := publish.NewBodyHash(body)
	p := &publish.PubPlan{
		Tool:        "workbench_put_file",
		Sn:          obs.Sn,
		Mode:        mode,
		ID:          id,
		Path:        path,
		NewInc:      nokv.NewIncarnationID(),
		Base:        obs.Entry,
		ContentType: ct,
		Size:        uint64(len(body)),
		Digest:      publish.DigestURIOf(h),
		Rows:        publish.OwnRows(st, 0, nil),
		St:          st,
	}
	out, werr, rejected := publish.Publish(ctx, s, p)
	if werr != nil {
		if rejected {
			publish.DiscardStaging(ctx, s, p.St)
		}
		return nil, werr
	}
	publish.RememberBody(s.Root(), p.St.Rev, h, p.Size)
	return &PutFileResult{
		FileLocation: s.FileLocation(id, path),
		SizeBytes:    p.Size,
		DigestURI:    p.Digest,
		Generation:   out.Generation,
		ContentType:  ct,
		Replace:      replace,
	}, nil
}
