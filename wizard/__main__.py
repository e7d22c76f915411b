from wizard.app import main

raise SystemExit(main())
