// Command petstore is the animal store service: PocketBase plus the /v1 pets API.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/pocketbase/pocketbase"
	"github.com/pocketbase/pocketbase/cmd"
	"github.com/pocketbase/pocketbase/core"
	"github.com/spf13/cobra"

	"petstore/hooks"
	"petstore/internal/backup"
	"petstore/internal/cluster"
	"petstore/internal/commands"
	"petstore/internal/datadir"
	"petstore/internal/options"
	_ "petstore/internal/profiling" // empty unless built with -tags pprof
	"petstore/internal/version"
	_ "petstore/migrations"
)

func main() {
	// Before anything is created: the data directory and every file in it
	// are the owner's alone, whatever umask the process was started with.
	datadir.RestrictUmask()
	app, self, err := newApp(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	root := app.RootCmd
	root.Version = version.Read().String()
	root.SetVersionTemplate("{{.Version}}\n")
	// PocketBase's root command ignores unknown flags, and its Execute the
	// error a command returns. Here an unknown flag is an error, and every
	// error is printed once, by main, on stderr (stdout is `keys create`'s,
	// for the key), and exits 1.
	root.FParseErrWhitelist = cobra.FParseErrWhitelist{}
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetErr(os.Stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	})

	// PocketBase's own commands, made here rather than by app.Start, so that
	// serve can have flags of petstore's. Without PocketBase's banner, which
	// names only /api/ and /_/: hooks prints a fuller one.
	serve := cmd.NewServeCommand(app, false)
	keys := commands.NewKeysCommand(app)
	healthcheck, versionCmd := newHealthcheckCommand(), newVersionCommand()
	backups := backup.NewCommand(app, hooks.FixedCollections())
	var service *hooks.Service // bound once the options are parsed
	secrets := commands.NewSecretsCommand(app, func() error { return service.TakeDataDir() })
	setAside := commands.NewSetAsideCommand(app)
	root.AddCommand(cmd.NewSuperuserCommand(app), serve, keys.Command, commands.NewCategoriesCommand(app), commands.NewCustomersCommand(app), secrets, backups.Command,
		setAside, healthcheck.Command, versionCmd)
	// None opens the data directory's databases: they run without the
	// bootstrap, so that a start in progress (which holds the start lock)
	// or data from a newer version cannot hold them up. The backup command
	// says which of its own skip it (a restore replaces databases that
	// nothing has open; create and list on a follower read a copy).
	withoutData := map[*cobra.Command]bool{healthcheck.Command: true, versionCmd: true}
	for _, c := range setAside.Commands() {
		withoutData[c] = true
	}

	flags := options.Bind(root.PersistentFlags(), serve.PersistentFlags(), self, appFlags...)
	signals := make(chan os.Signal, 1)
	// A cluster node that stepped down after it won (its lease lost) is
	// replaced by a fresh process of the same command line, which follows:
	// PocketBase holds the database open for writing and cannot follow in
	// place.
	steppedDown := make(chan struct{})
	var stepOnce sync.Once
	// Every command, once cobra has parsed its flags: its options are
	// parsed into values, then the service is bound and the data directory
	// opened. Nothing touches the directory before every value is parsed.
	cobra.EnableTraverseRunHooks = true // keys' own pre-run follows this one
	// The console, once the options are known: a command's failure is then
	// one event of its format (one JSON object in JSON), not plain text.
	var console *slog.Logger
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		opts, err := flags.Parse(c == serve, os.Stdout, os.Stderr)
		if err != nil || withoutData[c] {
			return err
		}
		if skip, err := backups.SkipsBootstrap(c, app.DataDir(), opts.Startup.LockTimeout); skip || err != nil {
			return err
		}
		if opts.Banner == nil { // JSON
			console = slog.New(opts.Console)
		}
		opts.SteppedDown = func() { stepOnce.Do(func() { close(steppedDown) }) }
		service = hooks.Register(app, opts)
		if err := app.Bootstrap(); err != nil {
			return err
		}
		// From here on a signal ends the command and stops the service;
		// before, it ends the process, as under PocketBase's Execute.
		signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
		return nil
	}

	err = execute(app, signals, steppedDown)
	if errors.Is(err, cluster.ErrSteppedDown) {
		err = replaceProcess()
	}
	switch {
	case errors.Is(err, cluster.ErrStopped): // a cluster follower's SIGTERM
	case err != nil && !errors.Is(err, keys.Err()) && console != nil: // keys prints its own
		console.Error("petstore failed", "error", err.Error())
		os.Exit(1)
	case err != nil && !errors.Is(err, keys.Err()):
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	case err != nil || healthcheck.Err() != nil:
		os.Exit(1)
	}
}

// execute runs the command line until its command ends or a signal
// arrives, then terminates app (which stops the service), as PocketBase's
// Execute does, but returning the command's error. A cluster node that
// stepped down (steppedDown closes) returns cluster.ErrSteppedDown at once,
// stopping nothing: its fence is closed, what it committed is shipped, and
// the process is replaced.
func execute(app *pocketbase.PocketBase, signals <-chan os.Signal, steppedDown <-chan struct{}) error {
	done := make(chan error, 1)
	go func() { done <- app.RootCmd.Execute() }()
	var err error
	select {
	case err = <-done:
	case <-signals:
	case <-steppedDown:
	}
	select {
	case <-steppedDown: // before serving, too: the command then failed with it
		return cluster.ErrSteppedDown
	default:
	}
	terminated := app.OnTerminate().Trigger(&core.TerminateEvent{App: app}, func(e *core.TerminateEvent) error {
		return e.App.ResetBootstrapState()
	})
	return errors.Join(err, terminated)
}

// replaceProcess replaces this process by a fresh one with the same
// arguments and environment (execve); it returns only why it could not.
func replaceProcess() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot restart as a follower: %w", err)
	}
	return fmt.Errorf("cannot restart as a follower: %w", syscall.Exec(exe, os.Args, os.Environ()))
}
