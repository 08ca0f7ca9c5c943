package storesuite

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The store suite's sequential specification, for porcupine.
//
// Each key holds a list of ids, written as the ids joined by ",". An append
// adds its id at the end and returns the list after it; a read returns the
// list. An append whose outcome its client never learned is settled by the
// final state before the check: if its id is in its key's final list it
// applied, at some point after it was called, and it is recorded with an
// unconstrained output and a return time after everything else; if not,
// it never applied (appends only grow a list) and it is left out. Leaving
// it out loses nothing: had it applied and been lost, any read that saw
// its id would have no operation to explain it.

// storeUnknownReturn is the return time of an operation whose outcome is
// unknown: after every other event of the history.
const storeUnknownReturn = math.MaxInt64

// storeInput is one operation's input.
type storeInput struct {
	Key    int
	Append bool
	ID     string // the appended id
}

// storeOutput is one operation's output.
type storeOutput struct {
	List    string // the list read, or the list an append returned
	Unknown bool   // an append whose outcome its client never learned, found applied
}

// storeAppendID returns list with id appended.
func storeAppendID(list, id string) string {
	if list == "" {
		return id
	}
	return list + "," + id
}

// storeSplitList returns the ids of list.
func storeSplitList(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// storeModel returns the model of one key (the history is partitioned by
// key before checking).
func storeModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return "" },
		Step: func(state, input, output any) (bool, any) {
			s, in, out := state.(string), input.(storeInput), output.(storeOutput)
			if !in.Append {
				return out.List == s, s
			}
			next := storeAppendID(s, in.ID)
			return out.Unknown || out.List == next, next
		},
		Hash: func(state any) uint64 {
			h := fnv.New64a()
			h.Write([]byte(state.(string)))
			return h.Sum64()
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(storeInput), output.(storeOutput)
			switch {
			case !in.Append:
				return fmt.Sprintf("read(k%d) -> [%s]", in.Key, out.List)
			case out.Unknown:
				return fmt.Sprintf("append(k%d, %s) -> ? (applied)", in.Key, in.ID)
			}
			return fmt.Sprintf("append(k%d, %s) -> [%s]", in.Key, in.ID, out.List)
		},
		DescribeState: func(state any) string { return "[" + state.(string) + "]" },
	}
}

// storeDescribeHistory renders a key's operations in call order, for a
// failure report: at most limit lines, the last ones (where a violation is
// usually found) kept.
func storeDescribeHistory(ops []porcupine.Operation, limit int) []string {
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	m := storeModel()
	var lines []string
	for _, op := range sorted {
		ret := "inf"
		if op.Return != storeUnknownReturn {
			ret = fmt.Sprintf("%.3fms", float64(op.Return)/1e6)
		}
		lines = append(lines, fmt.Sprintf("  client %d [%.3fms, %s] %s",
			op.ClientId, float64(op.Call)/1e6, ret, m.DescribeOperation(op.Input, op.Output)))
	}
	if len(lines) > limit {
		lines = append([]string{fmt.Sprintf("  ... %d earlier operations", len(lines)-limit)}, lines[len(lines)-limit:]...)
	}
	return lines
}
