from sparkenv.cli import main

main()
