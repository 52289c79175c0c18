package commands

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/spf13/cobra"

	"petstore/internal/audit"
	"petstore/internal/customers"
)

// NewCustomersCommand returns `customers create|list|show|rename|plan|assign`,
// working on app's --dir. Its errors are the command's: main prints them and
// exits 1. A customer is named by its id or its name.
func NewCustomersCommand(app core.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "customers",
		Short: "Create, list, show and change the customers that own keys, and give them keys",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		// PocketBase applies migrations only in `serve`.
		PersistentPreRunE: func(*cobra.Command, []string) error { return app.RunAllMigrations() },
	}
	c.AddCommand(customerCreateCommand(app), customerListCommand(app), customerShowCommand(app),
		customerRenameCommand(app), customerPlanCommand(app), customerAssignCommand(app))
	return c
}

func customerCreateCommand(app core.App) *cobra.Command {
	var name, contact, notes, plan string
	cmd := &cobra.Command{
		Use:   "create --name NAME --plan PLAN [--contact EMAIL] [--notes TEXT]",
		Short: "Create a customer on a plan",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return fmt.Errorf("--name is required")
			}
			if plan == "" {
				return fmt.Errorf("--plan is required")
			}
			c, err := customers.Create(app, customers.Input{Name: &name, Contact: &contact, Notes: &notes, Plan: &plan}, audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Created customer %s, %s, on plan %s.\n", c.Id, c.Name(), plan)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the customer's name, unique whatever the letter case (required)")
	cmd.Flags().StringVar(&plan, "plan", "", "the plan of the customer's keys, e.g. pro (required)")
	cmd.Flags().StringVar(&contact, "contact", "", "who to write to, an e-mail address")
	cmd.Flags().StringVar(&notes, "notes", "", "staff's notes about the customer")
	return cmd
}

func customerListCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the customers, with their plans and how many keys (not revoked) they have",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := customers.List(app)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tNAME\tPLAN\tKEYS\tCONTACT")
			for _, c := range list {
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", c.ID, c.Name, c.Plan, c.Keys, c.Contact)
			}
			return w.Flush()
		},
	}
}

func customerShowCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID|NAME",
		Short: "Show a customer and its keys, revoked ones included",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, keys, err := customers.Show(app, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Customer %s: %s\nPlan:     %s\nContact:  %s\nNotes:    %s\n\n", c.ID, c.Name, c.Plan, c.Contact, c.Notes)
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "KEY\tNAME\tPREFIX\tSTATE")
			now := time.Now()
			for _, k := range keys {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", k.Id, k.Name(), k.Prefix(), k.State(now))
			}
			return w.Flush()
		},
	}
}

func customerRenameCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "rename ID|NAME NEW_NAME",
		Short: "Rename a customer",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := customers.Change(app, args[0], customers.Input{Name: &args[1]}, audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Customer %s is now %s.\n", c.Id, c.Name())
			return nil
		},
	}
}

func customerPlanCommand(app core.App) *cobra.Command {
	return &cobra.Command{
		Use:   "plan ID|NAME PLAN",
		Short: "Put a customer, and every key of it at once, on another plan",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := customers.Change(app, args[0], customers.Input{Plan: &args[1]}, audit.CLI)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Customer %s (%s) and its keys are on plan %s.\n", c.Id, c.Name(), args[1])
			return nil
		},
	}
}

func customerAssignCommand(app core.App) *cobra.Command {
	var none bool
	cmd := &cobra.Command{
		Use:   "assign KEY_ID (ID|NAME | --none)",
		Short: "Give a key to a customer, which puts it on the customer's plan; --none takes it from its customer",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := ""
			switch {
			case none && len(args) == 2:
				return fmt.Errorf("give a customer or --none, not both")
			case !none && len(args) == 1:
				return fmt.Errorf("a customer (its id or name) is required, or --none")
			case !none:
				ref = args[1]
			}
			k, err := customers.Assign(app, args[0], ref, audit.CLI)
			if err != nil {
				return err
			}
			if ref == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "Key %s belongs to no customer.\n", k.Id)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Key %s belongs to customer %s.\n", k.Id, k.CustomerID())
			return nil
		},
	}
	cmd.Flags().BoolVar(&none, "none", false, "take the key from its customer (it keeps its plan)")
	return cmd
}
