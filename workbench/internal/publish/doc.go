// Package publish makes a body visible, object first and metadata last:
// it stages the body's blocks through manifests/bodies (staging.go), then
// runs one engine command, the publication (publish_command.go), which
// checks every predicate against its snapshot and writes the revision, its
// manifest rows, the path, the references and the change event at once.
// files and history publish through it; maintenance reads its reference
// bookkeeping (refs.go). It registers the publication's command handler,
// so that any replica carries another's intents.
package publish
