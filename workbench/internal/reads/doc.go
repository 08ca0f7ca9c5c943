// Package reads holds the tools that read a workbench's tree through one
// view: workbench_stat, workbench_list, workbench_read and workbench_grep.
// Its cursors sign with package query's cursor codec.
package reads
