package workbench

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/history"
	"github.com/cairnstore/cairn/workbench/internal/snapshots"
)

// The typed inputs of the history tools have exactly the members of their
// tools' input schemas, as the internal inputs do (registerTool).
func TestHistoryInputTypesMatchTheirSchemas(t *testing.T) {
	for tool, typ := range map[string]reflect.Type{
		"workbench_commit":          reflect.TypeFor[history.CommitInput](),
		"workbench_snapshot":        reflect.TypeFor[snapshots.SnapshotInput](),
		"workbench_snapshot_renew":  reflect.TypeFor[snapshots.SnapshotRenewInput](),
		"workbench_snapshot_retire": reflect.TypeFor[snapshots.SnapshotRetireInput](),
		"workbench_snapshot_list":   reflect.TypeFor[snapshots.SnapshotListInput](),
		"workbench_restore":         reflect.TypeFor[history.RestoreInput](),
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Error(fmt.Sprint(r))
				}
			}()
			core.CheckInputType(tool, typ)
		}()
	}
}
