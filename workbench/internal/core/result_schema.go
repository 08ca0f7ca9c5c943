package core

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// resultSchemasJSON holds the JSON schema of each contract tool's success
// result and the schema of the error envelope, as cairn serves them:
// the types of result-transcript.json's examples, with the members the
// contract leaves optional (at_snapshot, expiry_warning, the
// not_modified answer of workbench_read) and the values it fixes.
//
// These schemas describe; they do not check. Tools are not validated
// against them when they run: the tests validate every result variant
// against them with a full JSON Schema validator (draft 2020-12), which
// also means they may use keywords the input validator (schema.go) does
// not support. A value that can be several JSON types is an anyOf of
// single-type schemas, never a type array, so that code generators take
// them.
//
//go:embed schemas/result-schemas.json
var resultSchemasJSON []byte

// ResultSchemasVersion is the schema marker of the embedded result
// schemas.
const ResultSchemasVersion = "cairn.workbench.result_schemas.v1"

// genericResultSchema is the result schema of a registered tool that
// declares none: an object whose status is "success".
var genericResultSchema = json.RawMessage(`{"properties":{"status":{"const":"success","type":"string"}},"required":["status"],"type":"object"}`)

// resultSchemas is the embedded file, loaded once.
var resultSchemas = mustLoadResultSchemas(resultSchemasJSON)

type loadedResultSchemas struct {
	envelope json.RawMessage            // canonical
	tools    map[string]json.RawMessage // canonical, by tool
}

func mustLoadResultSchemas(b []byte) loadedResultSchemas {
	r, err := loadResultSchemas(b)
	if err != nil {
		panic(err)
	}
	return r
}

func loadResultSchemas(b []byte) (loadedResultSchemas, error) {
	fail := func(format string, a ...any) (loadedResultSchemas, error) {
		return loadedResultSchemas{}, fmt.Errorf("workbench: load result schemas: "+format, a...)
	}
	var doc struct {
		Schema        string                     `json:"schema"`
		ErrorEnvelope json.RawMessage            `json:"errorEnvelope"`
		ResultSchemas map[string]json.RawMessage `json:"resultSchemas"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return fail("%v", err)
	}
	if doc.Schema != ResultSchemasVersion {
		return fail("schema marker %q, want %s", doc.Schema, ResultSchemasVersion)
	}
	if got := slices.Sorted(maps.Keys(doc.ResultSchemas)); !slices.Equal(got, slices.Sorted(slices.Values(contractToolNames()))) {
		return fail("tools %v, want the 18 Workbench tools", got)
	}
	r := loadedResultSchemas{tools: map[string]json.RawMessage{}}
	var err error
	if r.envelope, err = objectSchema(doc.ErrorEnvelope); err != nil {
		return fail("errorEnvelope: %v", err)
	}
	for name, s := range doc.ResultSchemas {
		if r.tools[name], err = objectSchema(s); err != nil {
			return fail("%s: %v", name, err)
		}
	}
	return r, nil
}

// objectSchema returns the canonical JSON of a schema whose top level is
// an object with "type":"object", as MCP requires of an output schema.
func objectSchema(raw []byte) (json.RawMessage, error) {
	v, err := DecodeArguments(raw)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if obj, ok := v.(map[string]any); !ok || obj["type"] != "object" {
		return nil, fmt.Errorf(`not an object with "type":"object"`)
	}
	return MarshalResult(v)
}

// ResultSchema returns the JSON schema of a tool's success result as
// canonical JSON (keys sorted, compact), and whether the tool exists.
func ResultSchema(name string) (json.RawMessage, bool) {
	info, ok := Tool(name)
	return info.ResultSchema, ok
}

// ErrorEnvelopeSchema returns the JSON schema of the error envelope every
// tool answers a failure with, as canonical JSON.
func ErrorEnvelopeSchema() json.RawMessage {
	return slices.Clone(resultSchemas.envelope)
}
