from wizard.cli import main

raise SystemExit(main())
