package commands

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/spf13/cobra"

	"petstore/internal/replica"
)

// NewSetAsideCommand returns `set-aside list|prune`: the databases a
// cluster node set aside in app's --dir when it followed (a former
// leader's, which may hold writes never shipped). Neither opens a database:
// both run beside a running node, without the bootstrap (main runs them
// so). A prune is not in the audit trail: a follower's copy
// takes no writes but the leader's; it prints what it removed.
func NewSetAsideCommand(app core.App) *cobra.Command {
	root := &cobra.Command{
		Use:   "set-aside",
		Short: "List or remove the databases a cluster node set aside in --dir's set-aside/ (a former leader's, which may hold writes never shipped)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the databases set aside, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			copies, err := replica.ListSetAside(app.DataDir())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "PATH\tBYTES\tSET ASIDE (UTC)")
			for _, c := range copies {
				fmt.Fprintf(w, "%s\t%d\t%s\n", c.Path, c.Bytes, c.At.Format(time.DateTime))
			}
			return w.Flush()
		},
	}
	var olderThan time.Duration
	prune := &cobra.Command{
		Use:   "prune --older-than D",
		Short: "Remove the databases set aside more than D ago (0: every one), with their write-ahead logs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("older-than") || olderThan < 0 {
				return fmt.Errorf("--older-than: a duration of 0 or more (720h: set aside more than 30 days ago; 0: every one)")
			}
			removed, err := replica.PruneSetAside(app.DataDir(), olderThan, time.Now())
			for _, c := range removed {
				fmt.Fprintf(cmd.OutOrStdout(), "Removed %s (%d bytes, set aside %s UTC).\n", c.Path, c.Bytes, c.At.Format(time.DateTime))
			}
			if err == nil && len(removed) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "Nothing to remove.")
			}
			return err
		},
	}
	prune.Flags().DurationVar(&olderThan, "older-than", 0, "remove the databases set aside more than this long ago; 0: every one")
	root.AddCommand(list, prune)
	return root
}
