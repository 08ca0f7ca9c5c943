package workbench

import (
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Seeding of read-side test data straight through the engine: a
// workbench marker and published artifacts written as the records the
// write tools produce (WorkspaceCurrent, PathCurrent, ArtifactRevision,
// ArtifactManifest rows and block objects), so that stat, list and read
// can be tested on shapes that other clients may store but the Workbench
// write tools cannot: an artifact outside the five sections, at a
// section's own name, or at a name that also has artifacts below it.

// SeedFile is one artifact for SeedFilesForTest.
type SeedFile struct {
	Path        string // stored path, e.g. "outputs/a.txt"
	ContentType string
	Body        []byte
}

// SeedFilesForTest publishes files in one commit, as the write tools
// would one by one (see SeedQueryWorkbench), and returns their
// generations.
func SeedFilesForTest(tb testing.TB, s *Service, id string, files ...SeedFile) []uint64 {
	tb.Helper()
	q := make([]QuerySeedFile, len(files))
	for i, f := range files {
		q[i] = QuerySeedFile{Path: f.Path, Body: f.Body, ContentType: f.ContentType}
	}
	return seedQueryWorkbench(tb, s, id, nokv.WorkspaceStateVisible, q)
}
