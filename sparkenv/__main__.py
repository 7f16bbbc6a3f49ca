from sparkenv.cli.entry import main

main()
