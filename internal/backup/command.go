package backup

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/spf13/cobra"

	"petstore/internal/audit"
	"petstore/internal/fixedcollections"
	"petstore/internal/replica"
)

// Command is the `backup` command tree.
type Command struct {
	*cobra.Command
	// Restore is `backup restore`, which must run without the bootstrap:
	// it replaces the databases the bootstrap would open.
	Restore *cobra.Command

	create, list *cobra.Command
	// follower holds while create or list runs on a cluster follower's
	// copy (SkipsBootstrap), waiting at most lockTimeout for the directory.
	follower    bool
	lockTimeout time.Duration
}

// SkipsBootstrap reports whether cmd runs without the app's bootstrap on
// dataDir: a restore always; create and list on a cluster follower's copy,
// which the bootstrap refuses (it would open the copy for writing) and
// which they read from a copy of their own, waiting at most lockTimeout
// (--lock-timeout) while an offline restore holds the directory.
func (c *Command) SkipsBootstrap(cmd *cobra.Command, dataDir string, lockTimeout time.Duration) (bool, error) {
	switch cmd {
	case c.Restore:
		return true, nil
	case c.create, c.list:
		following, _, err := replica.Following(dataDir)
		c.follower, c.lockTimeout = following, lockTimeout
		return following, err
	}
	return false, nil
}

// NewCommand returns `backup create|list|restore`, working on app's --dir;
// a restore checks the backup's fixed collections against their
// migrations'. Its errors are the command's: main prints them and exits 1.
func NewCommand(app core.App, fixed []fixedcollections.Collection) *Command {
	c := &Command{Command: &cobra.Command{
		Use:   "backup",
		Short: "Make, list and restore backups of the data directory (zips, as the dashboard's)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}}
	c.Restore = restoreCommand(app, fixed)
	c.create, c.list = c.createCommand(app), c.listCommand(app)
	c.AddCommand(c.create, c.list, c.Restore)
	return c
}

func (c *Command) createCommand(app core.App) *cobra.Command {
	var name string
	var keep int
	cmd := &cobra.Command{
		Use:   "create [--name NAME.zip] [--keep N]",
		Short: "Back up the data directory while the service serves, into its backups (pb_data/backups, or S3 as the settings say)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keep < 0 {
				return fmt.Errorf("--keep: a count of backups, 0 to keep every one")
			}
			started := time.Now()
			if name == "" {
				name = Name(started)
			}
			if c.follower {
				return createOnFollower(cmd.OutOrStdout(), app, name, keep, c.lockTimeout, started)
			}
			info, err := Create(context.Background(), app, name, audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Created the backup %s (%d bytes) in %.0f ms.\n", info.Name, info.Size, millis(time.Since(started)))
			if keep == 0 {
				return nil
			}
			deleted, err := Prune(app, keep, audit.CLI)
			printDeleted(cmd.OutOrStdout(), deleted, keep)
			return err
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the backup's name (default "+Prefix+"YYYYMMDDHHMMSS.zip, UTC)")
	cmd.Flags().IntVar(&keep, "keep", 0, "then delete all but the newest N backups named "+Prefix+"… (0: keep every one)")
	return cmd
}

// createOnFollower makes the backup name from a copy of the follower's
// data in app's --dir and then keeps the newest keep, printing what it did:
// a follower writes no audit trail, so its printed lines (in the backup
// timer's journal) are the record.
func createOnFollower(out io.Writer, app core.App, name string, keep int, lockTimeout time.Duration, started time.Time) error {
	if err := CheckName(name); err != nil {
		return err
	}
	f, err := openFollowerCopy(app.DataDir(), app.EncryptionEnv(), lockTimeout)
	if err != nil {
		return err
	}
	defer f.close()
	info, err := create(context.Background(), f.app, name, f.backups)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Created the backup %s (%d bytes) in %.0f ms from this cluster follower's copy of the data (cluster %s, term %d, up to transaction %s). "+
		"A follower does not write the audit trail: this line is the backup's record.\n",
		info.Name, info.Size, millis(time.Since(started)), f.copied.Cluster, f.copied.Term, f.copied.Applied)
	if keep == 0 {
		return nil
	}
	deleted, err := prune(f.backups, keep, func(string) error { return nil })
	printDeleted(out, deleted, keep)
	return err
}

func printDeleted(out io.Writer, deleted []string, keep int) {
	for _, d := range deleted {
		fmt.Fprintf(out, "Deleted the backup %s (--keep %d).\n", d, keep)
	}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (c *Command) listCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the backups, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := c.listBackups(app)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tBYTES\tMODIFIED (UTC)")
			for _, b := range list {
				fmt.Fprintf(w, "%s\t%d\t%s\n", b.Name, b.Size, b.Modified.UTC().Format(time.DateTime))
			}
			return w.Flush()
		},
	}
}

// listBackups lists app's backups; on a follower, those in the storage
// the cluster's settings name (the copy's).
func (c *Command) listBackups(app core.App) ([]Info, error) {
	if !c.follower {
		return List(app)
	}
	f, err := openFollowerCopy(app.DataDir(), app.EncryptionEnv(), c.lockTimeout)
	if err != nil {
		return nil, err
	}
	defer f.close()
	return list(f.backups)
}

func restoreCommand(app core.App, fixed []fixedcollections.Collection) *cobra.Command {
	return &cobra.Command{
		Use:   "restore BACKUP",
		Short: "Replace the data of a stopped data directory with a backup (a name in its backups, or a zip's path)",
		Long: "Replace the data of --dir, which no petstore process may have open, with the backup: the name of a zip in " +
			"--dir's backups, or the path of one (with a /: ./backup.zip in the working directory). The backup is refused, and " +
			"nothing changed, when its data.db holds a table, index, view or trigger that petstore's migrations and PocketBase " +
			"do not make, a fixed collection changed, or a file only a running node writes (data.db-follow). The data it " +
			"replaces is kept until the next start, which carries its audit trail across and writes backup.restored.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			done, err := Restore(context.Background(), app.DataDir(), Source(app.DataDir(), args[0]), audit.CLI, fixed)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Restored %s into %s.\n", done.Backup, app.DataDir())
			if len(done.LeftOut) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "Left out of the backup (not part of a data directory's data): %s.\n", strings.Join(done.LeftOut, ", "))
			}
			if done.Replaced != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "The data it replaced is in %s until the next start, which carries its audit trail across.\n", done.Replaced)
			}
			return nil
		},
	}
}
