package backup

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/spf13/cobra"

	"petstore/internal/audit"
	"petstore/internal/fixedcollections"
)

// Command is the `backup` command tree.
type Command struct {
	*cobra.Command
	// Restore is `backup restore`, which must run without the bootstrap:
	// it replaces the databases the bootstrap would open.
	Restore *cobra.Command
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
	c.AddCommand(createCommand(app), listCommand(app), c.Restore)
	return c
}

func createCommand(app core.App) *cobra.Command {
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
			info, err := Create(context.Background(), app, name, audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Created the backup %s (%d bytes) in %.0f ms.\n",
				info.Name, info.Size, float64(time.Since(started).Microseconds())/1000)
			if keep == 0 {
				return nil
			}
			deleted, err := Prune(app, keep, audit.CLI)
			for _, d := range deleted {
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted the backup %s (--keep %d).\n", d, keep)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the backup's name (default "+Prefix+"YYYYMMDDHHMMSS.zip, UTC)")
	cmd.Flags().IntVar(&keep, "keep", 0, "then delete all but the newest N backups named "+Prefix+"… (0: keep every one)")
	return cmd
}

func listCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the backups, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := List(app)
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
