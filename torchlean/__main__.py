from torchlean.cli import main

raise SystemExit(main())
