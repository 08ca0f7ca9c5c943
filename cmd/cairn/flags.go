package main

import (
	"flag"
	"fmt"
	"slices"
)

// nonEmptyFlags returns an error naming the first of the named flags that
// the command line sets to "": an empty id or URL is a mistake, never a
// request for the default.
func nonEmptyFlags(fs *flag.FlagSet, names ...string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if err == nil && slices.Contains(names, f.Name) && f.Value.String() == "" {
			err = fmt.Errorf("--%s is empty", f.Name)
		}
	})
	return err
}
