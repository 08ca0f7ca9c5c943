package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// front reads a request's body within the limit and answers the requests
// the SDK would refuse with a bare HTTP status and a line of text as
// JSON-RPC errors, as the reference's sidecar does: a body that is not
// JSON (-32700), a message that is not JSON-RPC 2.0 (-32600), a method
// this server does not serve (-32601) and tools/call without params
// (-32602). Everything else goes on to the SDK with the body it read.
type front struct {
	sdk   http.Handler
	call  CallFunc
	limit int64
}

// served are the request methods the handler answers; the SDK also
// implements resources, prompts, completion and logging, which this
// server neither serves nor advertises.
var served = map[string]bool{
	"initialize":      true,
	"server/discover": true, // initialize's stateless successor (2026-07-28)
	"ping":            true,
	"tools/list":      true,
	"tools/call":      true,
}

func (f front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		f.sdk.ServeHTTP(w, r) // GET and DELETE are 405: nothing streams
		return
	}
	body, err := f.read(w, r)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", f.limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if status, answer := screen(body); answer != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(answer)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), callKey{}, f.call))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	f.sdk.ServeHTTP(w, r)
}

// read returns r's body. A body the server has already read (within its
// own limit and budget, cmd/cairn/internal/serve) offers its bytes with
// a Bytes method, and is taken as it is; any other is read within
// f.limit, into a slice of its declared length when it has one.
func (f front) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if held, ok := r.Body.(interface{ Bytes() []byte }); ok {
		return held.Bytes(), nil
	}
	body := http.MaxBytesReader(w, r.Body, f.limit)
	if r.ContentLength < 0 || r.ContentLength > f.limit {
		return io.ReadAll(body)
	}
	b := make([]byte, r.ContentLength)
	_, err := io.ReadFull(body, b)
	return b, err
}

// errorAnswer is a JSON-RPC error response.
type errorAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   jsonrpc.Error   `json:"error"`
}

// screen returns the JSON-RPC error answer to a body the SDK should not
// see, with its HTTP status, or a nil answer. It reads the message with
// the SDK's own decoder, so both agree on what the message says. A batch
// (an array) goes to the SDK whole.
func screen(body []byte) (int, *errorAnswer) {
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
		return 0, nil
	}
	if !json.Valid(body) {
		return http.StatusBadRequest, answer(nil, jsonrpc.CodeParseError, "parse error: the body is not JSON")
	}
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		return http.StatusBadRequest, answer(nil, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return 0, nil // a response or a notification: the SDK takes it
	}
	id, err := json.Marshal(req.ID.Raw())
	if err != nil {
		id = nil // unreachable: the decoder made the id from JSON
	}
	if !served[req.Method] {
		return http.StatusOK, answer(id, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method not found: %q", req.Method))
	}
	if req.Method == "tools/call" {
		if p := bytes.TrimLeft(req.Params, " \t\r\n"); len(p) == 0 || p[0] != '{' {
			return http.StatusOK, answer(id, jsonrpc.CodeInvalidParams, "invalid params: tools/call takes an object with the tool's name")
		}
	}
	return 0, nil
}

func answer(id json.RawMessage, code int64, message string) *errorAnswer {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return &errorAnswer{JSONRPC: "2.0", ID: id, Error: jsonrpc.Error{Code: code, Message: message}}
}
