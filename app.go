package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase"

	"petstore/internal/banner"
	"petstore/internal/database"
	"petstore/internal/envflag"
)

// appFlags are PocketBase's global flags, which it reads when the app is
// made, before the commands run: newApp reads their variables.
var appFlags = []string{"dir", "dev", "encryptionEnv", "queryTimeout"}

// newApp makes the PocketBase app of the command line args, without opening
// its data directory, and says how a shell runs this binary on the same
// directory.
func newApp(args []string) (*pocketbase.PocketBase, banner.Invocation, error) {
	// Not pocketbase.New(): under `go run` it turns on dev mode, which prints
	// SQL on stdout, where `keys create` prints the new key.
	config := pocketbase.Config{
		DBConnect:        database.Connect,
		DataMaxOpenConns: database.ReadPoolConns,
		DataMaxIdleConns: database.ReadPoolConns,
	}
	if err := pocketBaseEnv(&config); err != nil {
		return nil, banner.Invocation{}, err
	}
	dir, given := dirArgument(args)
	if given {
		config.DefaultDataDir = dir
	}
	app := pocketbase.NewWithConfig(config)
	// go run builds the binary in a go-build directory of its own.
	self := banner.Invocation{Binary: os.Args[0], GoRun: strings.Contains(filepath.ToSlash(os.Args[0]), "/go-build")}
	if _, env := os.LookupEnv(envflag.Name("dir")); given || env {
		self.Dir, _ = filepath.Abs(app.DataDir())
	}
	return app, self, nil
}

// dirArgument is the command line's --dir. PocketBase reads --dir when the
// app is made, with a parse that stops at the first argument it cannot read,
// such as the negative duration of `keys roll ID --grace -1h --dir X`: the
// command would then open ./pb_data, not X. The last --dir wins, as in a
// full parse; "--" ends the flags.
func dirArgument(args []string) (string, bool) {
	dir, found := "", false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return dir, found
		case a == "--dir" && i+1 < len(args):
			dir, found = args[i+1], true
			i++
		case strings.HasPrefix(a, "--dir="):
			dir, found = strings.TrimPrefix(a, "--dir="), true
		}
	}
	return dir, found
}

// pocketBaseEnv sets config's defaults of PocketBase's global flags
// (appFlags) from their variables.
func pocketBaseEnv(config *pocketbase.Config) error {
	if v, ok := os.LookupEnv(envflag.Name("dir")); ok {
		config.DefaultDataDir = v
	}
	if v, ok := os.LookupEnv(envflag.Name("dev")); ok {
		dev, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid %s %q (for --dev): true or false", envflag.Name("dev"), v)
		}
		config.DefaultDev = dev
	}
	if v, ok := os.LookupEnv(envflag.Name("encryptionEnv")); ok {
		config.DefaultEncryptionEnv = v
	}
	if v, ok := os.LookupEnv(envflag.Name("queryTimeout")); ok {
		seconds, err := strconv.Atoi(v)
		if err != nil || seconds <= 0 {
			return fmt.Errorf("invalid %s %q (for --queryTimeout): a number of seconds", envflag.Name("queryTimeout"), v)
		}
		config.DefaultQueryTimeout = time.Duration(seconds) * time.Second
	}
	return nil
}
