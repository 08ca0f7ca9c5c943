package workbench

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
)

// workbench_put_file publishes a whole body. replace=false (the default) is
// create-only: an artifact or a directory at the path is AlreadyExists.
// replace=true is replace-only: a missing path is NotFound, a directory
// NotArtifact, and the write replaces the generation it observed (a
// concurrent replace makes it a retryable Conflict). It is never an
// upsert. A missing workbench is created by the same command.
func init() { registerTool("workbench_put_file", toolPutFile) }

// Default content types of a payload.
const (
	TextContentType   = "text/plain; charset=utf-8"
	BinaryContentType = "application/octet-stream"
)

func toolPutFile(s *Service, ctx context.Context, a Args) (map[string]any, *Error) {
	id, path, werr := writeTarget(a)
	if werr != nil {
		return nil, werr
	}
	body, def, werr := s.payloadArg(a)
	if werr != nil {
		return nil, werr
	}
	replace, _, werr := a.OptBool("replace")
	if werr != nil {
		return nil, werr
	}
	ct, _, werr := contentTypeArg(a, def)
	if werr != nil {
		return nil, werr
	}
	return s.putFile(ctx, id, path, body, ct, replace)
}

// payloadArg reads the payload of put_file and append: exactly one of text
// (its UTF-8 bytes) and base64 (RFC 4648 standard alphabet, canonical
// padding, no whitespace, zero trailing bits), at most MaxBytes decoded.
// It returns the bytes and the payload's default content type.
func (s *Service) payloadArg(a Args) ([]byte, string, *Error) {
	text, hasText, werr := a.OptString("text")
	if werr != nil {
		return nil, "", werr
	}
	b64, hasB64, werr := a.OptString("base64")
	if werr != nil {
		return nil, "", werr
	}
	var body []byte
	def := TextContentType
	switch {
	case hasText && hasB64:
		return nil, "", InvalidArguments("text and base64 are mutually exclusive")
	case !hasText && !hasB64:
		return nil, "", InvalidArguments("exactly one of text or base64 is required")
	case hasText:
		body = []byte(text)
	default:
		var err error
		if body, err = decodeBase64Payload(b64); err != nil {
			return nil, "", InvalidArguments("base64 payload is invalid: " + err.Error())
		}
		def = BinaryContentType
	}
	if limit := s.opts.MaxBytes; int64(len(body)) > limit {
		return nil, "", PayloadTooLarge(uint64(len(body)), uint64(limit))
	}
	return body, def, nil
}

// decodeBase64Payload decodes standard base64 strictly: padding required,
// no line breaks or other bytes outside the alphabet, and no non-zero bits
// after the last encoded byte.
func decodeBase64Payload(s string) ([]byte, error) {
	// The standard decoder skips '\r' and '\n'; the payload rule does not.
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return nil, fmt.Errorf("invalid byte 0x%02x at offset %d", s[i], i)
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// contentTypeArg returns the explicit content_type, checked as the
// storage side checks it (1 to 255 bytes, no NUL; InvalidState
// otherwise), or def when none is given.
func contentTypeArg(a Args, def string) (string, bool, *Error) {
	ct, given, werr := a.OptString("content_type")
	if werr != nil {
		return "", false, werr
	}
	if !given {
		return def, false, nil
	}
	if ct == "" || len(ct) > MaxContentTypeBytes || strings.IndexByte(ct, 0) >= 0 {
		return "", false, InvalidState(fmt.Sprintf("content type of %d bytes is invalid: want 1 to %d bytes without NUL", len(ct), MaxContentTypeBytes))
	}
	return ct, true, nil
}

// putFile publishes body at path of workbench id.
func (s *Service) putFile(ctx context.Context, id string, path []string, body []byte, ct string, replace bool) (map[string]any, *Error) {
	obs, werr := s.observe(ctx, id, path)
	if werr != nil {
		return nil, werr
	}
	mode := pubCreate
	if replace {
		// Replace-only: refuse before uploading anything.
		mode = pubReplace
		if obs.entry == nil {
			dir, werr := obs.hasDescendant(ctx, s, id, path)
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
	} else if dir, werr := obs.hasDescendant(ctx, s, id, path); werr != nil {
		return nil, werr
	} else if dir {
		return nil, AlreadyExists(fmt.Sprintf("%s already exists as a directory", LogicalPath(path)))
	}

	st := s.newStaging()
	st.blocks = s.planBlocks(st, 0, body)
	if werr := s.stageBytes(ctx, st, "workbench_put_file", id, path, body); werr != nil {
		return nil, werr
	}
	h := newBodyHash(body)
	p := &pubPlan{
		tool:        "workbench_put_file",
		mode:        mode,
		id:          id,
		path:        path,
		newInc:      NewIncarnationID(),
		base:        obs.entry,
		contentType: ct,
		size:        uint64(len(body)),
		digest:      digestURIOf(h),
		rows:        s.ownRows(st, 0, nil),
		st:          st,
	}
	out, werr, rejected := s.publish(ctx, p)
	if werr != nil {
		if rejected {
			s.discardStaging(ctx, st)
		}
		return nil, werr
	}
	rememberBody(s.root, st.rev, h, p.size)
	res := s.fileResult(id, path)
	res["size_bytes"] = p.size
	res["digest_uri"] = p.digest
	res["generation"] = out.Generation
	res["content_type"] = ct
	res["replace"] = replace
	return res, nil
}
