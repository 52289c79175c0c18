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
	"petstore/internal/banner"
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
	p := newProcess(app)
	p.commandLine(p.commands(), self)
	os.Exit(p.exitCode(p.runCommand()))
}

// command is one of petstore's commands and how it runs. skipsBootstrap
// reports whether c, the command line's command (this one or one under
// it), runs without the app's bootstrap (nil: none does). Such a command
// opens none of the data directory's databases, so that a start in
// progress (which holds the start lock) or data from a newer version
// cannot hold it up.
type command struct {
	*cobra.Command
	skipsBootstrap func(c *cobra.Command, opts options.Options) (bool, error)
}

// commands is petstore's command line: every command, in this order, and
// which run without the bootstrap.
func (p *process) commands() []command {
	setAside := commands.NewSetAsideCommand(p.app)
	return []command{
		{Command: cmd.NewSuperuserCommand(p.app)},
		{Command: p.serve},
		{Command: p.keys.Command},
		{Command: commands.NewCategoriesCommand(p.app)},
		{Command: commands.NewCustomersCommand(p.app)},
		{Command: commands.NewSecretsCommand(p.app, func() error { return p.service.TakeDataDir() })},
		// The backup command says which of its own skip it: a restore
		// replaces databases that nothing has open; create and list on a
		// follower read a copy.
		{Command: p.backups.Command, skipsBootstrap: func(c *cobra.Command, opts options.Options) (bool, error) {
			return p.backups.SkipsBootstrap(c, p.app.DataDir(), opts.Startup.LockTimeout)
		}},
		{Command: setAside, skipsBootstrap: subcommandsOf(setAside)},
		{Command: p.healthcheck.Command, skipsBootstrap: always},
		{Command: newVersionCommand(), skipsBootstrap: always},
	}
}

func always(*cobra.Command, options.Options) (bool, error) { return true, nil }

func subcommandsOf(parent *cobra.Command) func(*cobra.Command, options.Options) (bool, error) {
	return func(c *cobra.Command, _ options.Options) (bool, error) { return c.Parent() == parent, nil }
}

// skipsBootstrap asks c's row of table whether c runs without the
// bootstrap.
func skipsBootstrap(table []command, c *cobra.Command, opts options.Options) (bool, error) {
	for at := c; at != nil; at = at.Parent() {
		for _, row := range table {
			if row.Command == at && row.skipsBootstrap != nil {
				return row.skipsBootstrap(c, opts)
			}
		}
	}
	return false, nil
}

// process is petstore's process: the app, the commands main and the table
// share, and what a run leaves for its exit.
type process struct {
	app         *pocketbase.PocketBase
	serve       *cobra.Command
	keys        *commands.KeysCommand
	healthcheck *healthcheckCommand
	backups     *backup.Command
	service     *hooks.Service // bound once the options are parsed
	// console, once the options are known: a command's failure is then one
	// event of its format (one JSON object in JSON), not plain text; nil
	// for text.
	console *slog.Logger
	signals chan os.Signal
	// steppedDown closes when a cluster node that won steps down (its
	// lease lost): a fresh process of the same command line replaces it
	// and follows, as PocketBase holds the database open for writing and
	// cannot follow in place.
	steppedDown chan struct{}
	stepOnce    sync.Once
}

// newProcess makes the commands the table and main share: PocketBase's
// serve, made here rather than by app.Start so that it can have flags of
// petstore's, without PocketBase's banner, which names only /api/ and /_/
// (hooks prints a fuller one).
func newProcess(app *pocketbase.PocketBase) *process {
	return &process{
		app:         app,
		serve:       cmd.NewServeCommand(app, false),
		keys:        commands.NewKeysCommand(app),
		healthcheck: newHealthcheckCommand(),
		backups:     backup.NewCommand(app, hooks.FixedCollections()),
		signals:     make(chan os.Signal, 1),
		steppedDown: make(chan struct{}),
	}
}

// commandLine sets up PocketBase's root command with table's commands.
// PocketBase's root command ignores unknown flags, and its Execute the
// error a command returns. Here an unknown flag is an error, and every
// error is printed once, by main, on stderr (stdout is `keys create`'s,
// for the key), and exits 1.
func (p *process) commandLine(table []command, self banner.Invocation) {
	root := p.app.RootCmd
	root.Version = version.Read().String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.FParseErrWhitelist = cobra.FParseErrWhitelist{}
	root.SilenceErrors, root.SilenceUsage = true, true
	root.SetErr(os.Stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	})
	for _, row := range table {
		root.AddCommand(row.Command)
	}
	flags := options.Bind(root.PersistentFlags(), p.serve.PersistentFlags(), self, appFlags...)
	cobra.EnableTraverseRunHooks = true // keys' own pre-run follows this one
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return p.beforeCommand(table, flags, c) }
}

// beforeCommand runs before every command, once cobra has parsed its flags: its
// options are parsed into values, then, unless the command skips the
// bootstrap, the service is bound and the data directory opened. Nothing
// touches the directory before every value is parsed.
func (p *process) beforeCommand(table []command, flags *options.Flags, c *cobra.Command) error {
	opts, err := flags.Parse(c == p.serve, os.Stdout, os.Stderr)
	if err != nil {
		return err
	}
	if skip, err := skipsBootstrap(table, c, opts); skip || err != nil {
		return err
	}
	if opts.Banner == nil { // JSON
		p.console = slog.New(opts.Console)
	}
	opts.SteppedDown = func() { p.stepOnce.Do(func() { close(p.steppedDown) }) }
	p.service = hooks.Register(p.app, opts)
	if err := p.app.Bootstrap(); err != nil {
		return err
	}
	// From here on a signal ends the command and stops the service;
	// before, it ends the process, as under PocketBase's Execute.
	signal.Notify(p.signals, os.Interrupt, syscall.SIGTERM)
	return nil
}

// runCommand runs the command line (execute); a node that stepped down is
// replaced by a fresh process.
func (p *process) runCommand() error {
	err := execute(p.app, p.signals, p.steppedDown)
	if errors.Is(err, cluster.ErrSteppedDown) {
		err = replaceProcess()
	}
	return err
}

// exitCode is the process's exit status after err, printing err once:
// keys prints its own, and a cluster follower's SIGTERM is no failure.
func (p *process) exitCode(err error) int {
	switch {
	case errors.Is(err, cluster.ErrStopped):
		return 0
	case err != nil && errors.Is(err, p.keys.Err()):
		return 1
	case err != nil && p.console != nil:
		p.console.Error("petstore failed", "error", err.Error())
		return 1
	case err != nil:
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	case p.healthcheck.Err() != nil:
		return 1
	}
	return 0
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
