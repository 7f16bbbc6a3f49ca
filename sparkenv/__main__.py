from sparkenv.entry import main

main()
