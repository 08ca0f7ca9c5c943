package workbench

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// workbench_put_file publishes a whole body. replace=false (the default) is
// create-only: an artifact or a directory at the path is AlreadyExists.
// replace=true is replace-only: a missing path is NotFound, a directory
// NotArtifact, and the write replaces the generation it observed (a
// concurrent replace makes it a retryable Conflict). It is never an
// upsert. A missing workbench is created by the same command.
func init() { registerTool("workbench_put_file", (*Service).putFileTool) }

// putFileInput is workbench_put_file's input.
type putFileInput struct {
	targetInput
	payloadInput
	Replace bool `json:"replace"`
}

func (in *putFileInput) resolve(s *Service) *Error {
	if werr := in.targetInput.resolve(); werr != nil {
		return werr
	}
	return in.payloadInput.resolve(s.opts.MaxBytes)
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
	Success
	FileLocation
	SizeBytes   uint64 `json:"size_bytes"`
	DigestURI   string `json:"digest_uri"` // the body's SHA-256
	Generation  uint64 `json:"generation"` // the path's generation after the put
	ContentType string `json:"content_type"`
	Replace     bool   `json:"replace"` // whether the put was replace-only
}

func (s *Service) putFileTool(ctx context.Context, in *putFileInput) (*PutFileResult, *Error) {
	return s.putFile(ctx, in.id, in.path, in.body, in.contentType, in.Replace)
}

// putFile publishes body at path of workbench id.
func (s *Service) putFile(ctx context.Context, id string, path []string, body []byte, ct string, replace bool) (*PutFileResult, *Error) {
	obs, werr := s.observe(ctx, id, path)
	if werr != nil {
		return nil, werr
	}
	mode := pubCreate
	if replace {
		// Replace-only: refuse before uploading anything.
		mode = pubReplace
		if obs.entry == nil {
			dir, werr := obs.isDirectory(ctx, s, id, path)
			if werr != nil {
				return nil, werr
			}
			if dir {
				return nil, NotArtifact(LogicalPath(path))
			}
			return nil, NotFound(LogicalPath(path))
		}
	} else if obs.entry != nil {
		return nil, AlreadyExists(fmt.Sprintf("%s already exists", LogicalPath(path)))
	} else if dir, werr := obs.isDirectory(ctx, s, id, path); werr != nil {
		return nil, werr
	} else if dir {
		return nil, AlreadyExists(fmt.Sprintf("%s already exists as a directory", LogicalPath(path)))
	}

	st := s.planStaging("workbench_put_file", id, path, body)
	if werr := s.stageBytes(ctx, st, body); werr != nil {
		return nil, werr
	}
	h := newBodyHash(body)
	p := &pubPlan{
		tool:        "workbench_put_file",
		sn:          obs.sn,
		mode:        mode,
		id:          id,
		path:        path,
		newInc:      nokv.NewIncarnationID(),
		base:        obs.entry,
		contentType: ct,
		size:        uint64(len(body)),
		digest:      digestURIOf(h),
		rows:        ownRows(st, 0, nil),
		st:          st,
	}
	out, werr, rejected := s.publish(ctx, p)
	if werr != nil {
		if rejected {
			s.discardStaging(ctx, p.st)
		}
		return nil, werr
	}
	rememberBody(s.root, p.st.rev, h, p.size)
	return &PutFileResult{
		FileLocation: s.fileLocation(id, path),
		SizeBytes:    p.size,
		DigestURI:    p.digest,
		Generation:   out.Generation,
		ContentType:  ct,
		Replace:      replace,
	}, nil
}
