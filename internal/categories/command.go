package categories

import (
	"fmt"
	"text/tabwriter"

	"github.com/pocketbase/pocketbase/core"
	"github.com/spf13/cobra"

	"petstore/internal/audit"
	"petstore/internal/strictinput"
)

// NewCommand returns `categories create|list|rename|delete`, working on
// app's --dir. Its errors are the command's: main prints them and exits 1.
func NewCommand(app core.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "categories",
		Short: "Create, list, rename and delete the categories that name the pets' categoryId numbers",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		// PocketBase applies migrations only in `serve`.
		PersistentPreRunE: func(*cobra.Command, []string) error { return app.RunAllMigrations() },
	}
	c.AddCommand(createCommand(app), listCommand(app), renameCommand(app), deleteCommand(app))
	return c
}

func createCommand(app core.App) *cobra.Command {
	var number int64
	var name, description string
	cmd := &cobra.Command{
		Use:   "create [--id N] --name NAME [--description TEXT]",
		Short: "Create a category; without --id, it gets the next number no category or pet uses",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return fmt.Errorf("--name is required")
			}
			if cmd.Flags().Changed("id") && (number < 1 || number > MaxNumber) {
				return fmt.Errorf("--id: %w", ErrNumberInvalid)
			}
			c, err := Create(app, number, name, description, audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Created category %d, %s.\n", c.Number(), c.Name())
			return nil
		},
	}
	cmd.Flags().Int64Var(&number, "id", 0, "the category's number, the categoryId its pets carry (default: the next free one)")
	cmd.Flags().StringVar(&name, "name", "", "the category's name, e.g. Dogs (required)")
	cmd.Flags().StringVar(&description, "description", "", "what the category holds")
	return cmd
}

func listCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the categories and the numbers pets carry that no category names, with their pets",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			uses, err := Uses(app)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tPETS")
			for _, u := range uses {
				name := u.Name
				if name == "" {
					name = "(" + Unnamed(u.ID) + ")"
				}
				fmt.Fprintf(w, "%d\t%s\t%d\n", u.ID, name, u.Pets)
			}
			return w.Flush()
		},
	}
}

func renameCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "rename ID NAME",
		Short: "Rename the category with number ID",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			number, err := parseNumber(args[0])
			if err != nil {
				return err
			}
			c, err := Rename(app, number, args[1], audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Category %d is now %s.\n", c.Number(), c.Name())
			return nil
		},
	}
}

func deleteCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Delete the category with number ID; refused while pets carry it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			number, err := parseNumber(args[0])
			if err != nil {
				return err
			}
			if err := Delete(app, number, audit.CLI); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted category %d.\n", number)
			return nil
		},
	}
}

// parseNumber reads a category's number from the command line.
func parseNumber(s string) (int64, error) {
	n, err := strictinput.PositiveDecimal(s)
	if err != nil || n > MaxNumber {
		return 0, fmt.Errorf("ID %q: %w", s, ErrNumberInvalid)
	}
	return n, nil
}
