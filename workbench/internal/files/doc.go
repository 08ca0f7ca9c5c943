// Package files holds the tools that write one file or create a
// workbench: workbench_create, workbench_put_file, workbench_append and
// workbench_edit, each over package publish.
package files
